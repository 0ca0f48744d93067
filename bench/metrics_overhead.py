#!/usr/bin/env python3
"""What hvdrun --metrics-port costs a training loop (issue 32): the latency of
one blocking 4 KiB hvd.torch allreduce (bench/py_latency.py, 2 ranks) with
metrics off and on, alternated RUNS times; with metrics on, /metrics is
scraped every second as Prometheus would, so the workers' counters travel
on their heartbeat. Prints each run's median per call and the median of the
runs for each mode:

    python3 bench/metrics_overhead.py [--build build] [--runs 5] [--iters 2000]

The counters themselves (runtime/engine/engine_stats.h) are always kept (a
few relaxed atomic adds per op); "on" adds the heartbeat payload once a
second and hvdrun's page rendering, both off the ops' path.
"""
import argparse
import os
import pathlib
import re
import socket
import statistics
import subprocess
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, stop):
    while not stop.is_set():
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
        except OSError:
            pass
        stop.wait(1.0)


def one_run(build, metrics, iters, nbytes):
    port = free_port()
    args = [str(build / "bin" / "hvdrun"), "-np", "2"]
    if metrics:
        args += ["--metrics-port", str(port)]
    args += ["/usr/bin/python3", str(ROOT / "bench" / "py_latency.py"), "--bytes", str(nbytes),
             "--iters", str(iters), "--warmup", "200"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'python'}:{ROOT / 'bench'}",
           "HVD_LIBRARY": str(build / "lib" / "libhvd.so"), "OMP_NUM_THREADS": "1"}
    stop = threading.Event()
    scraper = threading.Thread(target=scrape, args=(port, stop), daemon=True)
    if metrics:
        scraper.start()
    try:
        out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    finally:
        stop.set()
    medians = [float(m) for m in re.findall(r"median ([\d.]+) us", out.stdout)]
    if out.returncode != 0 or len(medians) != 2:
        raise SystemExit(f"run failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return max(medians)  # the slower rank's median


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--bytes", type=int, default=4096)
    a = p.parse_args()
    build = pathlib.Path(a.build)
    results = {False: [], True: []}
    for i in range(a.runs):
        for metrics in (False, True):
            us = one_run(build, metrics, a.iters, a.bytes)
            results[metrics].append(us)
            print(f"run {i + 1} metrics {'on ' if metrics else 'off'}: median {us:.1f} us",
                  flush=True)
    off, on = statistics.median(results[False]), statistics.median(results[True])
    print(f"metrics_overhead: {a.bytes} B allreduce, 2 ranks, median of {a.runs} runs: "
          f"off {off:.1f} us, on {on:.1f} us ({(on - off) / off * 100:+.1f} %)")


if __name__ == "__main__":
    main()
