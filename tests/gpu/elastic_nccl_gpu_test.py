#!/usr/bin/env python3
"""Elastic training on CUDA tensors over NCCL, 3 ranks on one GPU (each
through tests/gpu/nccl_hostid.sh, so NCCL lets them share it):

    . bundle/env.sh && python3 tests/gpu/elastic_nccl_gpu_test.py [--hvdrun PATH]
    PYTHONPATH=python HVD_LIBRARY=build/lib/libhvd.so /usr/bin/python3 \\
        tests/gpu/elastic_nccl_gpu_test.py --hvdrun build/bin/hvdrun --device cpu

`hvdrun -np 3 --min-np 2 --max-np 3 -H localhost:3` with
HVD_GPU_TRANSPORT=nccl runs hvd.elastic.run over a TorchState (a small MLP
on the GPU, SGD with momentum through DistributedOptimizer, committed every
step). Rank --victim kills itself with SIGKILL right after step
--kill-step's update, once (a marker file says it did); the survivors go on
at 2 ranks, hvdrun starts a replacement in the same slot, which joins and
is synced, and the last step waits (at most 60 s) until the job is back at
3 ranks. Every rank then prints a checksum of its parameters. The test
passes when hvdrun exits 0, hvdrun reported the kill and the replacement,
and the 3 ranks' checksums are equal (bit for bit: the same averaged
gradients and the same updates on every rank).

--device cpu runs the same job on CPU tensors (HVD_GPU_TRANSPORT is then
irrelevant, no wrapper): it proves the script here. Exits 77 saying why when
CUDA is asked for but not available, 1 on failure.
"""
import argparse
import hashlib
import os
import pathlib
import re
import signal
import sys
import tempfile
import time

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))
from gpu_train import find_hvdrun, run_bounded  # noqa: E402  (helpers shared with it)
WRAPPER = HERE / "nccl_hostid.sh"
SKIP = 77
NP = 3


# ---------------------------------------------------------------- worker

def worker(a):
    import hvd.torch as hvd

    hvd.init()
    if a.device == "cuda":
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        torch.set_num_threads(1)
        device = torch.device("cpu")
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).to(device)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=opt, batch=0)
    first_incarnation = os.environ.get("HVD_REPLACEMENT") != "1"

    def data(rank, step):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(16, 32, generator=g)
        return x.to(device), (x[:, :4] * 0.5).to(device)

    def wait_for_full_size():
        # Collective on every rank at the last step: the replacement joins at
        # a check_host_updates (HostsUpdatedInterrupt; the step runs again at 3).
        deadline = time.monotonic() + 60
        while hvd.size() < NP and time.monotonic() < deadline:
            time.sleep(0.05)
            state.check_host_updates()

    @hvd.elastic.run
    def train(state):
        while state.batch < a.steps:
            if state.batch == a.steps - 1:
                wait_for_full_size()
            x, y = data(hvd.rank(), state.batch)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            if (first_incarnation and hvd.rank() == a.victim and state.batch == a.kill_step
                    and not os.path.exists(a.marker)):
                open(a.marker, "w").close()
                print(f"rank {hvd.rank()} kills itself after step {state.batch}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            print("COMMIT", state.batch, hvd.size(), flush=True)
            state.batch += 1
            state.commit()
            time.sleep(a.pause)

    train(state)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
    print(f"CHECKSUM rank {hvd.rank()} size {hvd.size()} sha256 {digest} sum "
          f"{flat.double().sum().item()!r}", flush=True)
    hvd.shutdown()


# ---------------------------------------------------------------- driver



def drive(a):
    if a.device == "cuda" and not torch.cuda.is_available():
        print("skipped: torch.cuda.is_available() is false (no CUDA device, or a CPU-only "
              f"torch {torch.__version__}); --device cpu runs the CPU variant", flush=True)
        return SKIP
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    if a.device == "cuda":
        env["HVD_GPU_TRANSPORT"] = "nccl"
    with tempfile.TemporaryDirectory(prefix="hvd-elastic-nccl-") as tmp:
        marker = os.path.join(tmp, "killed")
        command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker",
                   "--device", a.device, "--marker", marker, "--victim", str(a.victim),
                   "--kill-step", str(a.kill_step), "--steps", str(a.steps),
                   "--pause", str(a.pause)]
        if a.device == "cuda":
            command = ["bash", str(WRAPPER), *command]
        cmd = [find_hvdrun(a.hvdrun), "-np", str(NP), "--min-np", str(NP - 1), "--max-np",
               str(NP), "-H", f"localhost:{NP}", "--heartbeat-timeout-seconds", "2", *command]
        print("=== " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        rc, out = run_bounded(cmd, env, a.timeout)
        took = time.monotonic() - t0
        killed = os.path.exists(marker)
    print(out, flush=True)
    checksums = {int(m.group(1)): (int(m.group(2)), m.group(3), m.group(4)) for m in
                 re.finditer(r"CHECKSUM rank (\d+) size (\d+) sha256 (\w+) sum (\S+)", out)}
    sizes = {}
    for m in re.finditer(r"COMMIT (\d+) (\d+)", out):
        sizes.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
    problems = []
    if rc is None:
        problems.append(f"hvdrun ran past {a.timeout} s and was stopped")
    elif rc != 0:
        problems.append(f"hvdrun exited with {rc}")
    if not killed:
        problems.append(f"rank {a.victim} never killed itself (no marker)")
    if "was killed by signal 9" not in out or "started a replacement" not in out:
        problems.append("hvdrun did not report the kill -9 and a replacement")
    if sorted(checksums) != list(range(NP)):
        problems.append(f"checksums from ranks {sorted(checksums)}, expected 0..{NP - 1}")
    elif len({c[1] for c in checksums.values()}) != 1:
        problems.append(f"checksums differ: {checksums}")
    steps_at = {s: sorted(v) for s, v in sorted(sizes.items())}
    print(f"elastic_nccl ({a.device}): {took:.1f} s; world sizes per committed step: {steps_at}",
          flush=True)
    if problems:
        for p in problems:
            print(f"FAILED: {p}", flush=True)
        return 1
    digest = next(iter(checksums.values()))[1]
    print(f"passed: rank {a.victim} killed after step {a.kill_step}, replaced; {NP} ranks "
          f"finished {a.steps} steps with equal parameters (sha256 {digest})", flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hvdrun", help="default: $HVD_BUILD_DIR/bin/hvdrun, else hvdrun on PATH")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--kill-step", type=int, default=4)
    p.add_argument("--victim", type=int, default=1)
    p.add_argument("--pause", type=float, default=0.1, help="seconds between steps")
    p.add_argument("--timeout", type=float, default=150, help="seconds for the whole job")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--marker", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        worker(a)
        return 0
    return drive(a)


if __name__ == "__main__":
    sys.exit(main())
