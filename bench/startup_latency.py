#!/usr/bin/python3
"""Start-up latency: from launching hvdrun to every rank having finished init.

    sudo /usr/bin/python3 bench/startup_latency.py --build build [--ranks 2,8,32,64]
         [--repeat 3] [--worker c|python] [--no-local] [--no-torchrun]

Three "hosts" h1, h2, h3 are network namespaces on a bridge with one
hvd-agent each (tests/multihost/netns.py; needs root and `ip netns`);
hvdrun runs in the root namespace. N ranks are spread evenly over the hosts
(64: -H h1:22,h2:21,h3:21). Each worker prints CLOCK_MONOTONIC right after
init (one clock for the whole machine, namespaces included); the figure is
max(init time over ranks) - the time hvdrun was started, the median of
--repeat runs. Workers:

  c       build/bin/init_stamp (tests/multihost/init_stamp.cc): hvd_init() in C
  python  /usr/bin/python3 -c 'import hvd; hvd.init()' (the hvd package only, not torch)

Beside it, for reference: the same N on localhost only (hvdrun's embedded
agent, no daemon), and torchrun with 2 ranks whose workers call
init_process_group('gloo') (their import of torch shown separately).
The machines are shared and small: read the growth with N, not the absolutes.
--plot FILE.png also draws the table: seconds over N on log axes, a line
per launcher (bench/plots.py).
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
import time

import plots

ROOT = pathlib.Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\d+)\]<stdout>:.*t_init_ns (\d+)")
PY_WORKER = ("import time, hvd\n"
             "hvd.init()\n"
             "t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)\n"
             "print('rank', hvd.rank(), 't_init_ns', t, flush=True)\n"
             "hvd.shutdown()\n")
TORCH_WORKER = """\
import os, time
t_start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
import torch.distributed as dist
t_import = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
dist.init_process_group('gloo')
t_init = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
print('TORCH rank', dist.get_rank(), 't_start_ns', t_start, 't_import_ns', t_import,
      't_init_ns', t_init, flush=True)
dist.destroy_process_group()
"""


def spread(n, hosts):
    """'h1:a,h2:b,...' with n slots spread evenly over the first hosts (host-major)."""
    k = min(n, len(hosts))
    counts = [n // k + (1 if i < n % k else 0) for i in range(k)]
    return ",".join(f"{h.name}:{c}" for h, c in zip(hosts, counts))


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def run_hvdrun(argv, n, env, timeout):
    """(seconds to the last rank's init, seconds to hvdrun's exit)."""
    start = now_ns()
    r = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                       timeout=timeout)
    end = now_ns()
    times = {}
    for line in r.stdout.splitlines():
        m = STAMP.match(line)
        if m:
            times[int(m.group(1))] = int(m.group(2))
    if r.returncode != 0 or len(times) != n:
        raise RuntimeError(f"{' '.join(argv[:12])} ...: exit {r.returncode}, {len(times)} of {n} "
                           f"ranks reported\nstdout tail:\n{r.stdout[-2000:]}\n"
                           f"stderr tail:\n{r.stderr[-2000:]}")
    return (max(times.values()) - start) / 1e9, (end - start) / 1e9


def run_torchrun(python, env, timeout, workdir):
    worker = pathlib.Path(workdir) / "torch_worker.py"
    worker.write_text(TORCH_WORKER)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [python, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--redirects", "9:1", "--tee", "9:1", str(worker)]
    start = now_ns()
    r = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                       timeout=timeout)
    end = now_ns()
    rows = [list(map(int, re.findall(r"t_\w+_ns (\d+)", line)))
            for line in r.stdout.splitlines() if "TORCH rank" in line]
    if r.returncode != 0 or len(rows) != 2:
        raise RuntimeError(f"torchrun: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    last_init = max(row[2] for row in rows)
    import_s = max((row[1] - row[0]) for row in rows) / 1e9
    return (last_init - start) / 1e9, (end - start) / 1e9, import_s


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="build directory (bin/, lib/, python/)")
    p.add_argument("--ranks", default="2,8,32,64")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--worker", choices=["c", "python"], default="c")
    p.add_argument("--no-local", action="store_true", help="skip the localhost-only reference")
    p.add_argument("--no-torchrun", action="store_true")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--timeout", type=float, default=180)
    plots.add_plot_argument(p)
    args = p.parse_args()
    plots.check_plot_argument(args.plot)

    build = pathlib.Path(args.build).resolve()
    os.environ["HVD_BUILD_DIR"] = str(build)
    sys.path.insert(0, str(ROOT / "tests" / "multihost"))
    import netns  # noqa: E402
    from conftest import Agents, child_env  # noqa: E402

    reason = netns.unavailable_reason()
    if reason:
        sys.exit(f"startup_latency: {reason}")
    hvdrun = str(build / "bin" / "hvdrun")
    if args.worker == "c":
        worker = [str(build / "bin" / "init_stamp")]
        if not os.access(worker[0], os.X_OK):
            sys.exit(f"startup_latency: {worker[0]} is not built (use --worker python)")
    else:
        worker = [args.python, "-c", PY_WORKER]
    ranks = [int(x) for x in args.ranks.split(",")]
    env = child_env({"PYTHONPATH": str(build / "python"), "OMP_NUM_THREADS": "1"})

    cluster = netns.Cluster(3)
    netns.install_sigterm_teardown()
    cluster.setup()
    results = []  # (config, n, init medians, exit medians, runs)
    try:
        secret = cluster.workdir / "secret"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        agents = Agents(cluster, str(secret), None)
        agents.ensure(tls=False)
        for n in ranks:
            hosts = spread(n, cluster.hosts)
            configs = [("3 namespace hosts", cluster.launcher_args(
                [hvdrun, "-np", n, "-H", hosts, "--secret-file", secret,
                 "-x", "PYTHONPATH", *worker]), hosts)]
            if not args.no_local:
                configs.append(("localhost only", [hvdrun, "-np", str(n), "-H", f"localhost:{n}",
                                                   "-x", "PYTHONPATH", *worker],
                                f"localhost:{n}"))
            for name, argv, hosts_text in configs:
                inits, exits = [], []
                for _ in range(args.repeat):
                    init_s, exit_s = run_hvdrun(argv, n, env, args.timeout)
                    inits.append(init_s)
                    exits.append(exit_s)
                results.append((f"hvdrun, {name}", n, hosts_text, median(inits), median(exits)))
                print(f"  {name:18} N={n:3} -H {hosts_text:22} init "
                      f"{', '.join(f'{x:.3f}' for x in inits)} s", flush=True)
        agents.stop_all()
    finally:
        cluster.teardown()

    torch_row = None
    if not args.no_torchrun:
        with tempfile.TemporaryDirectory(prefix="hvdmh-torch-") as d:
            runs = [run_torchrun(args.python, child_env({"OMP_NUM_THREADS": "1"}),
                                 args.timeout, d) for _ in range(args.repeat)]
        torch_row = (median([r[0] for r in runs]), median([r[1] for r in runs]),
                     median([r[2] for r in runs]))

    worker_name = "init_stamp (C)" if args.worker == "c" else "python3 -c 'import hvd; hvd.init()'"
    print(f"\nStart-up latency, median of {args.repeat}; worker: {worker_name}")
    print("| launcher | ranks | hosts | launch -> all ranks initialized (s) | "
          "launch -> exit (s) |")
    print("| --- | --- | --- | --- | --- |")
    for name, n, hosts_text, init_s, exit_s in results:
        print(f"| {name} | {n} | {hosts_text} | {init_s:.3f} | {exit_s:.3f} |")
    if torch_row:
        print(f"| torchrun (gloo), localhost | 2 | localhost:2 | {torch_row[0]:.3f} "
              f"(import torch: {torch_row[2]:.3f}) | {torch_row[1]:.3f} |")
    for prefix in ("hvdrun, 3 namespace hosts", "hvdrun, localhost only"):
        rows = [(n, t) for name, n, _, t, _ in results if name == prefix]
        if len(rows) >= 2:
            steps = ", ".join(f"{n0}->{n1}: x{t1 / t0:.1f} for x{n1 / n0:g} ranks"
                              for (n0, t0), (n1, t1) in zip(rows, rows[1:]))
            n_last, t_last = rows[-1]
            print(f"{prefix}: {steps}; {t_last / n_last * 1000:.0f} ms per rank at {n_last}")
    if args.plot:
        plot(args.plot, f"Start-up latency, median of {args.repeat}; worker: {worker_name}",
             results, torch_row)


def plot(path, title, results, torch_row=None):
    """results: (launcher, ranks, hosts, init s, exit s); torch_row: (init s,
    exit s, import s) of torchrun with 2 ranks, or None."""
    rows = [(name, n, init_s, exit_s) for name, n, _, init_s, exit_s in results]
    if torch_row:
        rows.append(("torchrun (gloo), localhost", 2, torch_row[0], torch_row[1]))
    plots.lines(path, title, ["launcher", "ranks", "all ranks initialized", "exit"], rows,
                x="ranks", series="launcher", values=["all ranks initialized", "exit"],
                ylabel="seconds after launch", xlabel="ranks")
    plots.wrote(path)


if __name__ == "__main__":
    main()
