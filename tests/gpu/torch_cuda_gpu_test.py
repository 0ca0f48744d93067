"""ctest's entry for test_torch_cuda.py (label gpu): exits 77, saying why,
when torch sees no CUDA device (ctest reports it skipped); otherwise runs
it under hvdrun -np NP with HVD_GPU_TRANSPORT=TRANSPORT and returns its
exit code. With "mnist" after TRANSPORT it runs examples/pytorch_mnist.py
--cuda instead (2 epochs) and checks that it learns (accuracy above 50%).
With "hostid" each rank runs under nccl_hostid.sh (its own NCCL_HOSTID), so
that several ranks share one GPU over NCCL.

    torch_cuda_gpu_test.py HVDRUN NP TRANSPORT [mnist] [hostid]"""
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
    env = dict(os.environ, HVD_GPU_TRANSPORT=transport)
    wrapper = (["bash", str(pathlib.Path(__file__).resolve().with_name("nccl_hostid.sh"))]
               if "hostid" in sys.argv[4:] else [])
    if "mnist" in sys.argv[4:]:
        example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "pytorch_mnist.py"
        r = subprocess.run([hvdrun, "-np", np_, *wrapper, sys.executable, str(example), "--cuda",
                            "--epochs", "2"], env=env, timeout=TIMEOUT_S, capture_output=True,
                           text=True)
        print(r.stdout, r.stderr, flush=True)
        accuracies = [float(line.split("accuracy ")[1].split("%")[0])
                      for line in r.stdout.splitlines() if "accuracy " in line]
        return 0 if r.returncode == 0 and accuracies and accuracies[-1] > 50 else 1
    test = pathlib.Path(__file__).resolve().with_name("test_torch_cuda.py")
    cmd = [hvdrun, "-np", np_, *wrapper, sys.executable, "-m", "pytest", "-q", "-x", "-p",
           "no:cacheprovider", str(test)]
    return subprocess.run(cmd, env=env, timeout=TIMEOUT_S).returncode


if __name__ == "__main__":
    sys.exit(main())
