#!/usr/bin/env python3
"""hvd allreduce of CUDA tensors beside torch.distributed's NCCL allreduce of
the same tensors, in the same process and run (GPU machines; one GPU, so one
rank: NCCL refuses two ranks on one device):

    . bundle/env.sh && hvdrun -np 1 python3 bench/gpu_allreduce.py \\
        [--min-bytes 4K] [--max-bytes 1G] [--iters 20]

For each size: the median time of one blocking allreduce (hvd.allreduce_ then
torch.cuda.synchronize; dist.all_reduce then synchronize), bus bandwidth,
and the ratio hvd/torch (overhead: the target is <= 1.05 at >= 1 MiB and a
latency <= 1.5x torch's). Exits 77 saying why when CUDA is not available.
"""
import argparse
import os
import statistics
import sys
import time

import torch


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def median_time(fn, iters):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", default="4K")
    p.add_argument("--max-bytes", default="1G")
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is false: no usable GPU here")
        sys.exit(77)
    import torch.distributed as dist

    import hvd.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=hvd.rank(), world_size=hvd.size())
    print(f"gpu_allreduce: {hvd.size()} rank(s), {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}, median of {a.iters}")
    print(f"{'bytes':>12} {'hvd us':>10} {'torch us':>10} {'hvd GB/s':>9} {'torch GB/s':>10} "
          f"{'hvd/torch':>9}")
    size = parse_size(a.min_bytes)
    while size <= parse_size(a.max_bytes):
        t = torch.ones(size // 4, device="cuda")
        h = median_time(lambda: hvd.allreduce_(t, op=hvd.Sum, name="bench"), a.iters)
        d = median_time(lambda: dist.all_reduce(t), a.iters)
        bus = 2 * (hvd.size() - 1) / max(hvd.size(), 1) if hvd.size() > 1 else 1.0
        print(f"{size:>12} {h * 1e6:>10.1f} {d * 1e6:>10.1f} {size * bus / h / 1e9:>9.2f} "
              f"{size * bus / d / 1e9:>10.2f} {h / d:>9.2f}")
        size *= 4
    dist.destroy_process_group()
    hvd.shutdown()


if __name__ == "__main__":
    main()
