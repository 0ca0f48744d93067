#!/usr/bin/env python3
"""What autotune buys on the ResNet-50 gradient step: the 161 parameter
tensors of torchvision's resnet50 allreduced (average) per step from Python
(hvd.torch, one named allreduce_async_ per tensor, as DistributedOptimizer
does), measured in one run for:

  hvd defaults   hvdrun without autotune (fusion 64 MiB, cycle 1 ms, shm chunk 1 MiB)
  hvd autotune   hvdrun --autotune; timed once it has settled (its choice is printed)
  torch buckets  torch.distributed (Gloo), DDP-style 25 MiB buckets (resnet50_step.py)

    /usr/bin/python3 bench/autotune.py --build build --np 2 --steps 20 --repeat 3

The three alternate `--repeat` times, so drifts in machine load hit all
alike; prints the medians and the ratios (> 1: the first is faster).
--plot FILE.png also draws the medians as bars (bench/plots.py), and each
autotune run's search beside it, FILE-search1.png and on
(bench/plot_autotune.py).
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import plots

REPO = pathlib.Path(__file__).resolve().parents[1]


def worker(a):
    """One rank under hvdrun: tune (until settled) or warm up, then time steps."""
    import torch
    import hvd.torch as hvd
    from resnet50_step import shapes

    torch.set_num_threads(1)
    hvd.init()
    grads = [torch.ones(s) for s in shapes()][::-1]  # backward order

    def step():
        handles = [hvd.allreduce_async_(g, name=f"grad.{i}", op=hvd.Average)
                   for i, g in enumerate(grads)]
        for h in handles:
            hvd.synchronize(h)

    start, tuning_steps = time.monotonic(), 0
    if a.log:
        while True:  # every rank stops at the same step: rank 0 decides, broadcasts
            step()
            tuning_steps += 1
            done = hvd.rank() == 0 and "# settled:" in pathlib.Path(a.log).read_text()
            flag = hvd.broadcast(torch.tensor([int(done)]), root_rank=0, name="settled")
            if int(flag[0]):
                break
            if time.monotonic() - start > a.max_seconds:
                sys.exit(f"autotune.py: not settled after {a.max_seconds} s")
    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    slowest = hvd.allreduce(torch.tensor([statistics.median(times)]), op=hvd.Max, name="median")
    if hvd.rank() == 0:
        print(f"median step {float(slowest[0]):.3f} ms after {tuning_steps} tuning steps "
              f"({time.monotonic() - start:.1f} s)", flush=True)
    hvd.shutdown()


def hvd_run(a, autotune, search_plot=None):
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'python'}:{REPO / 'bench'}",
               HVD_LIBRARY=str(pathlib.Path(a.build, "lib", "libhvd.so").resolve()),
               OMP_NUM_THREADS="1")
    cmd = [os.path.join(a.build, "bin", "hvdrun"), "-np", str(a.np)]
    settled = ""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "autotune.csv")
        if autotune:
            cmd += ["--autotune", "--autotune-log-file", log] + a.autotune_flags.split()
        cmd += [sys.executable, __file__, "--worker", "--steps", str(a.steps),
                "--warmup", str(a.warmup), "--max-seconds", str(a.max_seconds)]
        if autotune:
            cmd += ["--log", log]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
        if autotune and os.path.exists(log):
            settled = [l for l in open(log) if l.startswith("# settled:")][-1].strip()
            if search_plot:
                from plot_autotune import plot_search, read_log
                plot_search(*read_log(log), search_plot)
                plots.wrote(search_plot)
    for line in r.stdout.splitlines():
        if "median step" in line:
            return float(line.split("median step")[1].split()[0]), line.split(">:", 1)[-1], settled
    sys.exit(f"autotune.py: hvd run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")


def main():
    from resnet50_step import add_step_arguments, torch_step

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_step_arguments(p)
    p.add_argument("--max-seconds", type=float, default=600, help="longest tuning, per run")
    p.add_argument("--autotune-flags", default="",
                   help="extra hvdrun flags for the autotune runs, e.g. "
                        "'--autotune-steps-per-sample 5'")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--log", default="", help=argparse.SUPPRESS)
    plots.add_plot_argument(p, "its table (and each autotune run's search)")
    a = p.parse_args()
    if a.worker:
        worker(a)
        return
    plots.check_plot_argument(a.plot)
    results = {"hvd defaults": [], "hvd autotune": [], "torch buckets": []}
    stem = os.path.splitext(a.plot)[0] if a.plot else None
    for i in range(a.repeat):
        ms, _, _ = hvd_run(a, autotune=False)
        results["hvd defaults"].append(ms)
        ms, line, settled = hvd_run(a, autotune=True,
                                    search_plot=stem and f"{stem}-search{i + 1}.png")
        results["hvd autotune"].append(ms)
        print(f"# autotune: {line}\n#   {settled}", flush=True)
        results["torch buckets"].append(torch_step("buckets", a.np, a.steps, a.warmup))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"# resnet50 gradients from Python, {a.np} ranks; median step over {a.repeat} "
          f"alternating runs of {a.steps} steps")
    for k, v in med.items():
        print(f"{k:<14} {v:9.2f} ms   (runs: {', '.join(f'{x:.2f}' for x in results[k])})")
    print(f"autotune vs defaults:      {med['hvd defaults'] / med['hvd autotune']:.2f}x faster")
    print(f"autotune vs torch buckets: {med['torch buckets'] / med['hvd autotune']:.2f}x faster")
    print(f"defaults vs torch buckets: {med['torch buckets'] / med['hvd defaults']:.2f}x faster")
    if a.plot:
        from resnet50_step import plot_steps
        plot_steps(a.plot, f"ResNet-50 gradients from Python, {a.np} ranks: median step over "
                   f"{a.repeat} alternating runs of {a.steps} steps", results, "hvd autotune")


if __name__ == "__main__":
    main()
