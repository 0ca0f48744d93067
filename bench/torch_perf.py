#!/usr/bin/env python3
"""The reference side of the benchmarks: the same sweep as hvd_perf, measured
with torch.distributed over its Gloo backend (Debian's torch), timed the same
way: the median of per-op times, the slowest rank's, float32.

    /usr/bin/python3 bench/torch_perf.py --np 2 --ops allreduce --min-bytes 4K --max-bytes 256M

Prints the same columns as hvd_perf; ops Gloo cannot run print n/a.
--plot FILE.png also draws the times over the size, one line per op, on log
axes (bench/plots.py).
"""
import argparse
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import plots


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1:].upper()]
    return int(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bus_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op == "broadcast":
        return 1.0
    return (n - 1) / n


def make_op(op, count, rank, size):
    """A zero-argument callable running one op of `count` float32 elements."""
    per_rank = count // size
    if op == "allreduce":
        t = torch.full((count,), float(rank + 1))
        return lambda: dist.all_reduce(t)
    if op == "broadcast":
        t = torch.full((count,), float(rank + 1))
        return lambda: dist.broadcast(t, 0)
    if op == "allgather":
        t = torch.full((per_rank,), float(rank + 1))
        outs = [torch.empty(per_rank) for _ in range(size)]
        return lambda: dist.all_gather(outs, t)
    if op == "alltoall":
        t = torch.full((count,), float(rank + 1))
        out = torch.empty(count)
        return lambda: dist.all_to_all_single(out, t)
    if op == "reducescatter":
        t = [torch.full((per_rank,), float(rank + 1)) for _ in range(size)]
        out = torch.empty(per_rank)
        return lambda: dist.reduce_scatter(out, t)
    raise SystemExit(f"torch_perf: unknown op '{op}'")


def worker(rank, size, port, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=size)
    if rank == 0:
        print(f"# torch.distributed {torch.__version__} gloo: {size} ranks, float32, "
              f"median of {args.iters} iterations after {args.warmup} warm-up", flush=True)
        print(f"{'op':<14} {'size(B)':>12} {'count':>12} {'time(us)':>12} {'algbw(GB/s)':>12} "
              f"{'busbw(GB/s)':>12}", flush=True)
    table = []  # (op, bytes, us, busbw) of the ops that ran, for --plot
    for op in args.ops.split(","):
        nbytes = parse_size(args.min_bytes)
        while nbytes <= parse_size(args.max_bytes):
            count = max(nbytes // 4 - (nbytes // 4) % size, size)
            try:
                run = make_op(op, count, rank, size)
                for _ in range(args.warmup):
                    run()
                times = []
                for _ in range(args.iters):
                    t0 = time.perf_counter()
                    run()
                    times.append((time.perf_counter() - t0) * 1e6)
                t = torch.tensor([statistics.median(times)], dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                us = t.item()
                algbw = count * 4 / us / 1e3
                row = (f"{op:<14} {count * 4:>12} {count:>12} {us:>12.1f} {algbw:>12.3f} "
                       f"{algbw * bus_factor(op, size):>12.3f}")
                table.append((op, count * 4, us, algbw * bus_factor(op, size)))
            except RuntimeError as e:  # an op this backend does not implement
                row = f"{op:<14} {count * 4:>12} {count:>12} {'n/a':>12}  ({str(e).splitlines()[0][:60]})"
                dist.barrier()
            if rank == 0:
                print(row, flush=True)
            nbytes *= args.factor
    dist.destroy_process_group()
    if rank == 0 and args.plot and table:
        plots.lines(args.plot, f"torch.distributed {torch.__version__} (Gloo), {size} ranks: "
                    f"median of {args.iters} iterations", ["op", "size", "time (us)", "busbw"],
                    table, x="size", series="op", values=["time (us)"],
                    ylabel="time per op (us)", bytes_x=True)
        plots.wrote(args.plot)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--ops", default="allreduce,allgather,broadcast,alltoall,reducescatter")
    p.add_argument("--min-bytes", default="4K")
    p.add_argument("--max-bytes", default="256M")
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    plots.add_plot_argument(p)
    args = p.parse_args()
    plots.check_plot_argument(args.plot)
    mp.spawn(worker, args=(args.np, free_port(), args), nprocs=args.np, join=True)


if __name__ == "__main__":
    sys.exit(main())
