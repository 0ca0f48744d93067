#!/usr/bin/python3
"""Elastic recovery: seconds from a worker's kill -9 to (a) the survivors'
next completed step and (b) the job back at full size (the replacement's
first completed step), for hvd beside torchrun's elastic restart, same job,
same run.

    /usr/bin/python3 bench/elastic_recovery.py --build build [--np 2] [--repeat 3]
         [--no-torchrun-default] [--no-spares]

Both jobs run the same loop: an allreduce of 1000 floats, a line
"STEP rank step t_ns size" (CLOCK_MONOTONIC, one clock for every process), 20 ms
of "compute". Rank 1 kills itself with SIGKILL after step 5, once, writing
the kill time first.

  hvd       hvdrun -np N --min-np N-1: hvd.torch.elastic.run with an
            ObjectState; the survivors recover in place (restore, shutdown +
            init: a round without the dead worker, sync) and go on at N-1
            while hvdrun starts a replacement on the same host; when it
            joins, the members let it in at their next commit.
  hvd --spares 1  the same with a hot spare waiting in hvd.init(): hvdrun
            promotes it into the dead worker's slot and the survivors' next
            round includes it (rank 1 waits until the spare is there before
            it dies, outside the measured time).
  torchrun  python3 -m torch.distributed.run --nproc_per_node N
            --max_restarts 3 --monitor_interval 0.5 (and the default 5):
            torchrun restarts every worker; the loop starts over.

torchrun's figures include its whole restart (new processes, torch import,
init_process_group), so its (a) and (b) are the same. The machine is small
and shared: compare the columns of one run, not runs. --plot FILE.png also
draws the table as bars (bench/plots.py).
"""
import argparse
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile

import plots

ROOT = pathlib.Path(__file__).resolve().parents[1]
STEP = re.compile(r"STEP (\d+) (\d+) (\d+) (\d+)")
KILL_AT, STEPS = 5, 250  # room for a replacement that starts slowly on a loaded machine

COMMON = r'''
import os, signal, sys, time
import torch
marker, kill_at, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)
def after_step(rank, step, size):
    print(f"STEP {rank} {step} {now()} {size}", flush=True)
    if rank == 1 and step == kill_at and not os.path.exists(marker):
        spare_dir = os.environ.get("BENCH_SPARE_DIR")
        deadline = time.monotonic() + 120
        while spare_dir and not os.listdir(spare_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        if spare_dir:
            time.sleep(0.3)  # from its file to its wait in hvd.init()
        with open(marker, "w") as f:
            f.write(str(now()))
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.02)
'''

HVD_WORKER = COMMON + r'''
import hvd.torch as hvd
if os.environ.get("BENCH_SPARE_DIR") and os.environ.get("HVD_SPARE"):
    open(os.path.join(os.environ["BENCH_SPARE_DIR"], os.environ["HVD_SPARE"]), "w").close()
hvd.init()
state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0)

@hvd.elastic.run
def train(state):
    while state.step < steps:
        hvd.allreduce(torch.ones(1000), op=hvd.Sum, name="grad")
        after_step(hvd.rank(), state.step, hvd.size())
        state.step += 1
        state.commit()

train(state)
hvd.shutdown()
'''

TORCH_WORKER = COMMON + r'''
import torch.distributed as dist
dist.init_process_group("gloo")
for step in range(steps):
    t = torch.ones(1000)
    dist.all_reduce(t)
    after_step(dist.get_rank(), step, dist.get_world_size())
dist.destroy_process_group()
'''


def child_env(build, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HVD_", "HOROVOD_", "SLURM_", "OMPI_"))}
    env.update({"PYTHONPATH": str(ROOT / "python"),
                "HVD_LIBRARY": str(pathlib.Path(build).resolve() / "lib" / "libhvd.so"),
                "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra or {})
    return env


def recovery(stdout, marker, size):
    """(a, b) seconds after the kill: the first step completed after it (by
    a survivor), and the first completed at the full `size` again (the
    replacement has joined; survivors are renumbered, so the victim's rank
    number tells nothing). Step KILL_AT itself is left out: the survivors may
    print it a moment after the victim wrote the kill time."""
    kill_ns = int(pathlib.Path(marker).read_text())
    after = [(int(m.group(3)), int(m.group(4))) for m in STEP.finditer(stdout)
             if int(m.group(3)) > kill_ns and int(m.group(2)) != KILL_AT]
    full = [t for t, n in after if n == size]
    if not after or not full:
        raise RuntimeError(f"no step after the kill at full size {size}\n{stdout[-3000:]}")
    return (min(t for t, _ in after) - kill_ns) / 1e9, (min(full) - kill_ns) / 1e9


def run_job(argv, env, marker, size, timeout=300):
    r = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:8])} ...: exit {r.returncode}\n"
                           f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return recovery(r.stdout, marker, size)


def hvd_run(build, python, np, workdir, i, spares=0):
    worker = pathlib.Path(workdir) / "hvd_worker.py"
    worker.write_text(HVD_WORKER)
    marker = pathlib.Path(workdir) / f"hvd-kill-{spares}-{i}"
    argv = [str(pathlib.Path(build) / "bin" / "hvdrun"), "-np", str(np), "--min-np",
            str(max(1, np - 1)), "--spares", str(spares), python, str(worker), str(marker),
            str(KILL_AT), str(STEPS)]
    extra = {}
    if spares:
        spare_dir = pathlib.Path(workdir) / f"spares-{i}"
        spare_dir.mkdir()
        extra["BENCH_SPARE_DIR"] = str(spare_dir)
    return run_job(argv, child_env(build, extra), marker, np)


def torchrun_run(build, python, np, workdir, i, monitor):
    worker = pathlib.Path(workdir) / "torch_worker.py"
    worker.write_text(TORCH_WORKER)
    marker = pathlib.Path(workdir) / f"torch-kill-{monitor}-{i}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [python, "-m", "torch.distributed.run", f"--nproc_per_node={np}",
            "--max_restarts=3", f"--monitor_interval={monitor}",
            "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--redirects", "9:1", "--tee", "9:1",  # Debian's torch 1.13 needs these (docs)
            str(worker), str(marker), str(KILL_AT), str(STEPS)]
    return run_job(argv, child_env(build), marker, np)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-torchrun-default", action="store_true",
                   help="skip torchrun with its default --monitor_interval (5 s)")
    p.add_argument("--no-spares", action="store_true", help="skip hvd with --spares 1")
    plots.add_plot_argument(p)
    args = p.parse_args()
    plots.check_plot_argument(args.plot)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        configs = [("hvd (survivors in place at N-1, then the replacement joins)",
                    lambda i: hvd_run(args.build, args.python, args.np, workdir, i)),
                   ("torchrun --monitor_interval 0.5 (restarts every worker)",
                    lambda i: torchrun_run(args.build, args.python, args.np, workdir, i, 0.5))]
        if not args.no_spares:
            configs.append(("hvd --spares 1 (a waiting spare takes the slot at once)",
                            lambda i: hvd_run(args.build, args.python, args.np, workdir, i, 1)))
        if not args.no_torchrun_default:
            configs.append(("torchrun, default --monitor_interval (5 s)",
                            lambda i: torchrun_run(args.build, args.python, args.np, workdir,
                                                   i, 5)))
        results = {name: [] for name, _ in configs}
        for i in range(args.repeat):  # alternate, so that drift hits every column alike
            for name, fn in configs:
                results[name].append(fn(i))
        for name, _ in configs:
            a = statistics.median(r[0] for r in results[name])
            b = statistics.median(r[1] for r in results[name])
            rows.append((name, a, b))
    print(f"\nElastic recovery, {args.np} ranks on this machine, median of {args.repeat} "
          f"(seconds after kill -9 of rank 1)\n")
    print("| job | (a) survivors' next step | (b) back at full size: first step at N |")
    print("| --- | --- | --- |")
    for name, a, b in rows:
        print(f"| {name} | {a:.3f} | {b:.3f} |")
    ref = rows[1]
    for row in [rows[0]] + [r for r in rows if r[0].startswith("hvd --spares")]:
        print(f"\n{row[0].split(' (')[0]} / torchrun(0.5 s): (a) {row[1] / ref[1]:.3f}x, "
              f"(b) {row[2] / ref[2]:.3f}x")
    if args.plot:
        plot(args.plot, args.np, args.repeat, rows)


def plot(path, np, repeat, rows):
    """rows: (job, (a) seconds, (b) seconds)."""
    plots.bars(path, f"Elastic recovery, {np} ranks, median of {repeat}: seconds after "
               f"kill -9 of rank 1", ["job", "(a) survivors' next step",
                                      "(b) back at full size"],
               [(name.replace(" (", "\n("), a, b) for name, a, b in rows],
               ylabel="seconds after the kill", wrap=26)
    plots.wrote(path)


if __name__ == "__main__":
    sys.exit(main())
