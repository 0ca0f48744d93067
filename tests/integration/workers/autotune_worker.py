"""Worker of test_autotune.py: allreduces a fixed set of gradient-like tensors
step after step, as a training loop would, checking every result exactly,
until rank 0 sees autotune's settled line in its log; then runs
--after-steps more steps under the settled parameters.

usage: autotune_worker.py LOG_FILE [--after-steps N] [--max-seconds S]
Prints "autotune_worker: rank R OK steps=N" at the end; exits 1 naming the
first wrong element, or when autotune did not settle within --max-seconds.
"""
import argparse
import sys
import time

import torch

import hvd.torch as hvd

# Sizes (float32 elements) of a small model's gradients: a few large, many small.
SIZES = [262144, 65536, 65536, 16384] + [4096] * 8 + [512] * 12 + [64] * 8


def settled(log_file):
    try:
        with open(log_file) as f:
            return any(line.startswith("# settled:") for line in f)
    except FileNotFoundError:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log_file")
    parser.add_argument("--after-steps", type=int, default=30)
    parser.add_argument("--max-seconds", type=float, default=120)
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    # Whole numbers: every sum is exact in float32 whatever the fusion.
    bases = [torch.arange(n, dtype=torch.float32) % 97 for n in SIZES]
    expected = [b * size + size * (size - 1) / 2 for b in bases]

    start = time.monotonic()
    steps = 0
    done_at = None
    while done_at is None or steps < done_at + args.after_steps:
        tensors = [b + rank for b in bases]
        handles = [hvd.allreduce_async_(t, name=f"grad.{i}", op=hvd.Sum)
                   for i, t in enumerate(tensors)]
        for h in handles:
            hvd.synchronize(h)
        for i, (t, e) in enumerate(zip(tensors, expected)):
            if not torch.equal(t, e):
                bad = int((t != e).nonzero()[0])
                print(f"autotune_worker: rank {rank} step {steps}: grad.{i}[{bad}] is "
                      f"{float(t[bad])}, expected {float(e[bad])}", flush=True)
                return 1
        steps += 1
        if done_at is None:
            # Every rank stops at the same step: rank 0 tells through a broadcast.
            flag = torch.tensor([1 if rank == 0 and settled(args.log_file) else 0])
            hvd.broadcast_(flag, root_rank=0, name="settled")
            if int(flag[0]) == 1:
                done_at = steps
            elif time.monotonic() - start > args.max_seconds:
                print(f"autotune_worker: rank {rank}: not settled after {steps} steps "
                      f"({args.max_seconds} s)", flush=True)
                return 1
    print(f"autotune_worker: rank {rank} OK steps={steps} settled_at={done_at}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
