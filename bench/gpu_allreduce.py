#!/usr/bin/env python3
"""hvd allreduce of CUDA tensors beside torch.distributed's NCCL allreduce of
the same bytes, in the same processes and run (GPU machines):

    . bundle/env.sh && hvdrun -np 1 python3 bench/gpu_allreduce.py
    . bundle/env.sh && hvdrun -np 2 tests/gpu/nccl_hostid.sh python3 bench/gpu_allreduce.py
        [--min-bytes 4K] [--max-bytes 256M] [--iters 20] [--device cpu]

Several ranks may share one GPU when each claims its own NCCL host
(tests/gpu/nccl_hostid.sh). hvd runs with HVD_GPU_TRANSPORT as the
environment sets it (default: nccl). torch.distributed's NCCL group is
created inside the same processes: rank 0 picks a free port and sends it to
the others with hvd.broadcast_object (MASTER_ADDR, default 127.0.0.1: one
host).

For each size, the median time of one blocking op followed by
torch.cuda.synchronize() for:

  torch       dist.all_reduce(t) of SIZE bytes, in place (the reference)
  allreduce_  hvd.allreduce_(t), in place
  allreduce   hvd.allreduce(t), a new output tensor
  grouped     hvd.grouped_allreduce of 8 tensors of SIZE/8 bytes each
              (against torch's one all_reduce of the same bytes: what a
              bucket of 8 gradients costs beside DDP's flattened bucket)

and each hvd path's ratio hvd/torch (time; issue 17's targets: an
overhead <= 3% at >= 1 MiB, ratio <= 1.03, and a 4 KiB latency <= 1.5x
torch's). Then the overhead at
>= 1 MiB per path (median ratio over those sizes) and `SUMMARY|...` lines
for tests/gpu/run_from_bundle.sh. Sizes above 16 MiB take fewer iterations
(at least 3) so that a run stays within ~40 s. --device cpu runs the same on
CPU tensors against torch's gloo (a smoke test without a GPU). Exits 77
saying why when CUDA is asked for but not available. --plot FILE.png: rank 0
also draws the table, the four times over the size on log axes and each hvd
path's ratio below (bench/plots.py).
"""
import argparse
import os
import socket
import statistics
import sys
import time

import torch

import plots

GROUP = 8


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def iterations(size, iters):
    """The same on every rank (a function of the size only): fewer above 16 MiB."""
    return max(3, min(iters, iters * (16 << 20) // size))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", default="4K")
    p.add_argument("--max-bytes", default="256M")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    plots.add_plot_argument(p)
    a = p.parse_args()
    plots.check_plot_argument(a.plot)
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is false: no usable GPU here", flush=True)
        sys.exit(77)
    import torch.distributed as dist

    import hvd.torch as hvd

    hvd.init()
    if cuda:
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())

        def sync():
            torch.cuda.synchronize()
    else:
        device = torch.device("cpu")

        def sync():
            pass
    port = hvd.broadcast_object(free_port() if hvd.rank() == 0 else 0, root_rank=0,
                                name="gpu_allreduce.port")
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://{addr}:{port}",
                            rank=hvd.rank(), world_size=hvd.size())
    warm = torch.zeros(1, device=device)
    dist.all_reduce(warm)
    hvd.allreduce_(warm, op=hvd.Sum, name="gpu_allreduce.warm")
    sync()

    def median_time(fn, iters):
        fn()
        sync()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    me = hvd.rank() == 0
    started = time.monotonic()
    name = torch.cuda.get_device_name() if cuda else "cpu"
    if me:
        print(f"gpu_allreduce: {hvd.size()} rank(s), {name}, torch {torch.__version__}, "
              f"HVD_GPU_TRANSPORT={os.environ.get('HVD_GPU_TRANSPORT', 'auto')}, "
              f"median of {a.iters} (fewer above 16 MiB); ratio = hvd time / torch time",
              flush=True)
        print(f"{'bytes':>10} {'torch us':>10} {'torch busGB/s':>13} | {'allreduce_ us':>13} "
              f"{'ratio':>6} | {'allreduce us':>12} {'ratio':>6} | {'grouped8 us':>11} "
              f"{'ratio':>6}", flush=True)
    bus = 2 * (hvd.size() - 1) / hvd.size() if hvd.size() > 1 else 1.0
    rows = []
    size = parse_size(a.min_bytes)
    while size <= parse_size(a.max_bytes):
        n = iterations(size, a.iters)
        t = torch.zeros(size // 4, device=device)  # zeros: sums never overflow
        parts = [torch.zeros(size // 4 // GROUP, device=device) for _ in range(GROUP)]
        ref = median_time(lambda: dist.all_reduce(t), n)
        inplace = median_time(lambda: hvd.allreduce_(t, op=hvd.Sum, name="bench.inplace"), n)
        outplace = median_time(lambda: hvd.allreduce(t, op=hvd.Sum, name="bench.outplace"), n)
        grouped = median_time(
            lambda: hvd.grouped_allreduce(parts, op=hvd.Sum, name="bench.grouped"), n)
        rows.append((size, ref, inplace, outplace, grouped))
        if me:
            print(f"{size:>10} {ref * 1e6:>10.1f} {size * bus / ref / 1e9:>13.2f} | "
                  f"{inplace * 1e6:>13.1f} {inplace / ref:>6.2f} | {outplace * 1e6:>12.1f} "
                  f"{outplace / ref:>6.2f} | {grouped * 1e6:>11.1f} {grouped / ref:>6.2f}",
                  flush=True)
        del t, parts
        size *= 4
    big = [r for r in rows if r[0] >= 1 << 20]
    np_ = f"np{hvd.size()}"
    if me:
        print(f"gpu_allreduce: {time.monotonic() - started:.1f} s", flush=True)
        if big:
            print(f"overhead at >= 1 MiB ({human(big[0][0])} to {human(big[-1][0])}; median "
                  f"hvd/torch - 1):", flush=True)
        summary = []
        if rows:
            size, ref, inplace = rows[0][:3]
            summary.append(f"SUMMARY|allreduce_ {np_} {human(size)} latency us|{inplace * 1e6:.1f}|"
                           f"{ref * 1e6:.1f}|{inplace / ref:.2f}|<= 1.50")
        for column, label in ((2, "allreduce_"), (3, "allreduce"), (4, "grouped_allreduce(8)")):
            if not big:
                break
            ratio = statistics.median(r[column] / r[1] for r in big)
            print(f"  {label:<22} {100 * (ratio - 1):+6.1f}%  (median ratio {ratio:.2f})",
                  flush=True)
            last = big[-1]
            summary.append(f"SUMMARY|{label} {np_} us at {human(last[0])}; ratio: median "
                           f"of {len(big)} sizes >= 1 MiB|{last[column] * 1e6:.0f}|"
                           f"{last[1] * 1e6:.0f}|{ratio:.2f}|<= 1.03")
        for line in summary:
            print(line, flush=True)
    dist.destroy_process_group()
    ranks = hvd.size()
    hvd.shutdown()
    if me and a.plot and rows:  # after shutdown: no rank waits for the drawing
        plot(a.plot, f"gpu_allreduce: {ranks} rank(s), {name}, "
             f"HVD_GPU_TRANSPORT={os.environ.get('HVD_GPU_TRANSPORT', 'auto')}", rows)


def plot(path, title, rows):
    """rows: (bytes, torch s, allreduce_ s, allreduce s, grouped s)."""
    table = [(size, ref * 1e6, a * 1e6, b * 1e6, c * 1e6, a / ref, b / ref, c / ref)
             for size, ref, a, b, c in rows]
    plots.lines(path, title, ["bytes", "torch", "allreduce_", "allreduce", f"grouped{GROUP}",
                              "allreduce_ / torch", "allreduce / torch",
                              f"grouped{GROUP} / torch"], table, x="bytes",
                values=["torch", "allreduce_", "allreduce", f"grouped{GROUP}"],
                ratio=["allreduce_ / torch", "allreduce / torch", f"grouped{GROUP} / torch"],
                ylabel="time per op (us)", note="ratio = hvd time / torch time (< 1: hvd faster)")
    plots.wrote(path)


if __name__ == "__main__":
    main()
