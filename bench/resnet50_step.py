#!/usr/bin/env python3
"""The ResNet-50 gradient step: the 161 parameter tensors of torchvision's
resnet50 allreduced (average) per step, 2 ranks on this machine, measured in
one run for:

  hvd fused        hvd_grad_step under hvdrun (default fusion threshold, 64 MiB)
  hvd unfused      the same with HVD_FUSION_THRESHOLD=0
  torch per-tensor torch.distributed (Gloo) all_reduce of each tensor
  torch buckets    DDP-style: tensors flattened into 25 MiB buckets, one
                   all_reduce per bucket, copied back

    /usr/bin/python3 bench/resnet50_step.py --build build --np 2 --steps 20

Prints the median step time of each and the ratios the targets name.
--plot FILE.png also draws them as bars, each with its time / hvd fused's
(bench/plots.py).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision

import plots


def shapes():
    return [tuple(p.shape) for p in torchvision.models.resnet50().parameters()]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_worker(rank, size, port, mode, steps, warmup, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=size)
    grads = [torch.ones(s) for s in shapes()][::-1]  # backward order
    buckets, current, current_bytes = [], [], 0
    for g in grads:
        current.append(g)
        current_bytes += g.numel() * 4
        if current_bytes >= 25 * 1024 * 1024:
            buckets.append(current)
            current, current_bytes = [], 0
    if current:
        buckets.append(current)

    def step():
        if mode == "per-tensor":
            works = [dist.all_reduce(g, async_op=True) for g in grads]
            for w, g in zip(works, grads):
                w.wait()
                g.div_(size)
        else:
            for bucket in buckets:
                flat = torch.cat([g.reshape(-1) for g in bucket])
                dist.all_reduce(flat)
                flat.div_(size)
                offset = 0
                for g in bucket:
                    g.copy_(flat[offset:offset + g.numel()].view_as(g))
                    offset += g.numel()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    t = torch.tensor([statistics.median(times)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        out.put(t.item())
    dist.destroy_process_group()


def torch_step(mode, size, steps, warmup):
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=torch_worker, args=(r, size, port, mode, steps, warmup, q))
             for r in range(size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=1800)
        if p.exitcode != 0:
            sys.exit(f"resnet50_step: torch {mode} worker failed ({p.exitcode})")
    return q.get()


def hvd_step(build, size, steps, warmup, shapes_file, fusion):
    env = dict(os.environ)
    if fusion is not None:
        env["HVD_FUSION_THRESHOLD"] = str(fusion)
    cmd = [os.path.join(build, "bin", "hvdrun"), "-np", str(size),
           os.path.join(build, "bin", "hvd_grad_step"), "--shapes", shapes_file,
           "--steps", str(steps), "--warmup", str(warmup)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    for line in r.stdout.splitlines():
        if "median step" in line:
            return float(line.split("median step")[1].split()[0])
    sys.exit(f"resnet50_step: hvd run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def add_step_arguments(p):
    """--build, --np, --steps, --warmup, --repeat (also bench/autotune.py's)."""
    p.add_argument("--build", default="build")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_step_arguments(p)
    plots.add_plot_argument(p)
    a = p.parse_args()
    plots.check_plot_argument(a.plot)
    s = shapes()
    with tempfile.NamedTemporaryFile("w", suffix=".shapes", delete=False) as f:
        for shape in s:
            f.write(" ".join(str(d) for d in shape) + "\n")
        shapes_file = f.name
    results = {"hvd fused": [], "hvd unfused": [], "torch per-tensor": [], "torch buckets": []}
    try:
        for _ in range(a.repeat):  # alternate, so drifts in machine load hit all alike
            results["hvd fused"].append(hvd_step(a.build, a.np, a.steps, a.warmup, shapes_file, None))
            results["hvd unfused"].append(hvd_step(a.build, a.np, a.steps, a.warmup, shapes_file, 0))
            results["torch per-tensor"].append(torch_step("per-tensor", a.np, a.steps, a.warmup))
            results["torch buckets"].append(torch_step("buckets", a.np, a.steps, a.warmup))
    finally:
        os.unlink(shapes_file)
    med = {k: statistics.median(v) for k, v in results.items()}
    mb = sum(torch.Size(x).numel() for x in s) * 4 / 1e6
    print(f"# resnet50: {len(s)} gradient tensors, {mb:.1f} MB float32, {a.np} ranks; "
          f"median step over {a.repeat} alternating runs of {a.steps} steps")
    for k, v in med.items():
        print(f"{k:<18} {v:9.2f} ms")
    print(f"fused vs unfused:          {med['hvd unfused'] / med['hvd fused']:.2f}x faster (on gloo; shm pays for the fusion copies)")
    print(f"fused vs torch buckets:    {med['torch buckets'] / med['hvd fused']:.2f}x faster "
          f"(hvd / torch {med['hvd fused'] / med['torch buckets']:.2f}; target <= 0.5)")
    print(f"fused vs torch per-tensor: {med['torch per-tensor'] / med['hvd fused']:.2f}x faster")
    if a.plot:
        plot_steps(a.plot, f"ResNet-50 gradient step: {len(s)} tensors, {mb:.1f} MB, {a.np} "
                   f"ranks; median over {a.repeat} alternating runs of {a.steps} steps",
                   results, "hvd fused")


def plot_steps(path, title, results, base):
    """Bars of each configuration's median step (ms; results: name -> runs),
    each with its median / base's (also bench/autotune.py's)."""
    med = {k: statistics.median(v) for k, v in results.items()}
    rows = [(k, v, v / med[base], ", ".join(f"{x:.1f}" for x in results[k]))
            for k, v in med.items()]
    plots.bars(path, title, ["configuration", "median step (ms)", f"time / {base}", "runs"],
               rows, values=["median step (ms)"], ratio=f"time / {base}",
               ylabel="step (ms)", note="runs: " + "; ".join(f"{r[0]} {r[3]}" for r in rows))
    plots.wrote(path)


if __name__ == "__main__":
    main()
