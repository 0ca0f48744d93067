#!/usr/bin/env python3
"""hvd against torch.distributed (Gloo), same sizes, same machine, same run.

    /usr/bin/python3 bench/compare_collectives.py --build build --np 2 \
        --ops allreduce,allgather,broadcast,alltoall,reducescatter --min-bytes 4K --max-bytes 256M

Runs hvd_perf under hvdrun, then bench/torch_perf.py, alternating the two
REPEAT times (the machines are shared and noisy: each figure is the median
over the repeats), and prints one table: time and bus bandwidth of each, the
ratio torch time / hvd time (> 1: hvd is faster), and hvd's bus bandwidth as
a fraction of memcpy's (one thread copying 64 MiB with numpy, measured
between the runs of the same invocation). --plot FILE.png also draws the
table: hvd's and torch's time over the size on log axes, one panel per op,
the ratio below (bench/plots.py).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy

import plots

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_rows(text):
    """{(op, bytes): (time_us, busbw)} from hvd_perf / torch_perf output."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and not line.startswith("#") and parts[1].isdigit():
            try:
                rows[(parts[0], int(parts[1]))] = (float(parts[3]), float(parts[5]))
            except ValueError:  # n/a
                rows[(parts[0], int(parts[1]))] = None
    return rows


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if r.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def strip_prefix(text):
    """hvdrun prefixes worker lines with [rank]<stdout>:."""
    out = []
    for line in text.splitlines():
        if line.startswith("[0]<stdout>:"):
            out.append(line[len("[0]<stdout>:"):])
    return "\n".join(out)


def memcpy_gbs(nbytes=64 << 20, iters=10):
    """Median GB/s of one thread copying nbytes (bytes written per second)."""
    src = numpy.ones(nbytes, dtype=numpy.uint8)
    dst = numpy.empty_like(src)
    numpy.copyto(dst, src)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        numpy.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--ops", default="allreduce,allgather,broadcast,alltoall,reducescatter")
    p.add_argument("--min-bytes", default="4K")
    p.add_argument("--max-bytes", default="256M")
    p.add_argument("--factor", default="4")
    p.add_argument("--iters", default="10")
    p.add_argument("--repeat", type=int, default=3)
    plots.add_plot_argument(p)
    a = p.parse_args()
    plots.check_plot_argument(a.plot)
    sweep = ["--ops", a.ops, "--min-bytes", a.min_bytes, "--max-bytes", a.max_bytes,
             "--factor", a.factor, "--iters", a.iters]
    hvd_cmd = [os.path.join(a.build, "bin", "hvdrun"), "-np", str(a.np),
               os.path.join(a.build, "bin", "hvd_perf")] + sweep
    torch_cmd = [sys.executable, os.path.join(HERE, "torch_perf.py"), "--np", str(a.np)] + sweep
    hvd_runs, torch_runs, memcpy = [], [], []
    for _ in range(a.repeat):
        hvd_runs.append(parse_rows(strip_prefix(run(hvd_cmd))))
        memcpy.append(memcpy_gbs())
        torch_runs.append(parse_rows(run(torch_cmd)))
    copy = statistics.median(memcpy)

    def med(runs, key, i):
        vals = [r[key][i] for r in runs if r.get(key)]
        return statistics.median(vals) if vals else None

    title = (f"# {a.np} ranks, float32; medians over {a.repeat} alternating runs of "
             f"{a.iters} iterations each; memcpy (1 thread, 64 MiB) {copy:.2f} GB/s")
    print(title)
    print(f"{'op':<14} {'size(B)':>11} {'hvd us':>10} {'torch us':>10} {'hvd busbw':>10} "
          f"{'torch busbw':>11} {'ratio':>7} {'hvd/memcpy':>10}")
    table = []
    for key in sorted(hvd_runs[0], key=lambda k: (a.ops.split(",").index(k[0]), k[1])):
        ht, tt = med(hvd_runs, key, 0), med(torch_runs, key, 0)
        hb, tb = med(hvd_runs, key, 1), med(torch_runs, key, 1)
        table.append((key[0], key[1], ht, tt, tt / ht if tt is not None and ht else None))
        if tt is None:
            print(f"{key[0]:<14} {key[1]:>11} {ht:>10.1f} {'n/a':>10} {hb:>10.3f} {'n/a':>11} "
                  f"{'-':>7} {hb / copy:>10.2f}")
        else:
            ratio = tt / ht if ht else float("nan")
            print(f"{key[0]:<14} {key[1]:>11} {ht:>10.1f} {tt:>10.1f} {hb:>10.3f} {tb:>11.3f} "
                  f"{ratio:>7.2f} {hb / copy:>10.2f}")
    if a.plot:
        plot(a.plot, title.lstrip("# "), table)


def plot(path, title, table):
    """table: (op, bytes, hvd us, torch us or None, ratio or None) rows."""
    plots.lines(path, f"hvd vs torch.distributed (Gloo): {title}",
                ["op", "size", "hvd us", "torch us", "torch / hvd time"], table, x="size",
                group="op", values=["hvd us", "torch us"], ratio="torch / hvd time",
                ylabel="time per op (us)", bytes_x=True,
                note="ratio > 1: hvd faster")
    plots.wrote(path)


if __name__ == "__main__":
    main()
