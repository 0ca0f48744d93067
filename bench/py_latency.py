#!/usr/bin/env python3
"""Latency of one blocking hvd.torch collective, as a Python training loop sees
it (ctypes call, engine, transport, wake-up, the output as a tensor), per rank:

    PYTHONPATH=python HVD_LIBRARY=build/lib/libhvd.so \\
        build/bin/hvdrun -np 2 /usr/bin/python3 bench/py_latency.py [--op allreduce] \\
        [--bytes 4096] [--iters 500]

Each rank prints the median time of one call; torch's reference is
`bench/torch_perf.py --np 2 --ops allreduce --min-bytes 4K --max-bytes 4K --iters 500`
(see bench/README.md). --op allgather, alltoall, reducescatter: ops whose
output libhvd allocates (bench/hvd_perf.cc times them without reading it).
--plot FILE.png: rank 0 also draws its calls' times in order, with the
median (bench/plots.py).
"""
import argparse
import statistics
import time

import torch

import hvd.torch as hvd
import plots


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--name", default="latency", help="tensor name ('' for unnamed ops)")
    p.add_argument("--op", default="allreduce",
                   choices=["allreduce", "allgather", "alltoall", "reducescatter", "broadcast"])
    plots.add_plot_argument(p, "rank 0's call times")
    a = p.parse_args()
    plots.check_plot_argument(a.plot)
    hvd.init()
    # --bytes: each rank's input, as torch_perf.py counts it (allgather: the
    # output is size times larger).
    t = torch.ones(max(a.bytes // 4, hvd.size()))
    name = a.name or None
    call = {"allreduce": lambda: hvd.allreduce(t, name=name),
            "allgather": lambda: hvd.allgather(t, name=name),
            "alltoall": lambda: hvd.alltoall(t, name=name),
            "reducescatter": lambda: hvd.reducescatter(t, name=name),
            "broadcast": lambda: hvd.broadcast(t, 0, name=name)}[a.op]
    for _ in range(a.warmup):
        call()
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
        del out
    print(f"py_latency: rank {hvd.rank()} of {hvd.size()}, {a.op} {t.numel() * 4} B: "
          f"median {statistics.median(times) * 1e6:.1f} us over {a.iters}")
    rank, size = hvd.rank(), hvd.size()
    hvd.shutdown()
    if a.plot and rank == 0:  # after shutdown: no rank waits for the drawing
        plot(a.plot, f"{a.op} {t.numel() * 4} B", size, times)


def plot(path, what, size, times):
    """Rank 0's call times (seconds) in order, with their median."""
    median = statistics.median(times) * 1e6
    rows = [(i + 1, x * 1e6, median) for i, x in enumerate(times)]
    plots.lines(path, f"py_latency: one blocking hvd.torch {what} from Python, rank 0 of "
                f"{size}: median {median:.1f} us over {len(times)} calls",
                ["call", "us", "median"], rows, x="call", logx=False, markers=False,
                ylabel="time per call (us)")
    plots.wrote(path)


if __name__ == "__main__":
    main()
