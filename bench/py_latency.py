#!/usr/bin/env python3
"""Latency of one blocking hvd.torch allreduce, as a Python training loop sees
it (ctypes call, engine, transport, wake-up), per rank:

    PYTHONPATH=python HVD_LIBRARY=build/lib/libhvd.so \\
        build/bin/hvdrun -np 2 /usr/bin/python3 bench/py_latency.py [--bytes 4096] [--iters 500]

Each rank prints the median time of one call; torch's reference is
`bench/torch_perf.py --np 2 --ops allreduce --min-bytes 4K --max-bytes 4K --iters 500`
(see bench/README.md).
"""
import argparse
import statistics
import time

import torch

import hvd.torch as hvd


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--name", default="latency", help="tensor name ('' for unnamed ops)")
    a = p.parse_args()
    hvd.init()
    t = torch.ones(max(a.bytes // 4, 1))
    name = a.name or None
    for _ in range(a.warmup):
        hvd.allreduce(t, name=name)
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        hvd.allreduce(t, name=name)
        times.append(time.perf_counter() - t0)
    print(f"py_latency: rank {hvd.rank()} of {hvd.size()}, allreduce {t.numel() * 4} B: "
          f"median {statistics.median(times) * 1e6:.1f} us over {a.iters}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
