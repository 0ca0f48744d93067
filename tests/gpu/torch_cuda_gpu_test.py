"""ctest's entry for test_torch_cuda.py (label gpu): exits 77, saying why,
when torch sees no CUDA device (ctest reports it skipped); otherwise runs
it under hvdrun -np NP with HVD_GPU_TRANSPORT=TRANSPORT and returns its
exit code.

    torch_cuda_gpu_test.py HVDRUN NP TRANSPORT"""
import os
import pathlib
import subprocess
import sys

import torch

SKIP = 77
TIMEOUT_S = 300


def main():
    hvdrun, np_, transport = sys.argv[1:4]
    if not torch.cuda.is_available():
        print("skipped: torch.cuda.is_available() is false (no CUDA device, or a CPU-only "
              f"torch {torch.__version__})", flush=True)
        return SKIP
    test = pathlib.Path(__file__).resolve().with_name("test_torch_cuda.py")
    env = dict(os.environ, HVD_GPU_TRANSPORT=transport)
    cmd = [hvdrun, "-np", np_, sys.executable, "-m", "pytest", "-q", "-x", "-p",
           "no:cacheprovider", str(test)]
    return subprocess.run(cmd, env=env, timeout=TIMEOUT_S).returncode


if __name__ == "__main__":
    sys.exit(main())
