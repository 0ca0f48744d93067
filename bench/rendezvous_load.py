#!/usr/bin/env python3
"""The rendezvous control plane at scale (issue 31): runs build/bin/
rendezvous_load (the real Rendezvous service in a child process, N ranks
played over async gRPC; see bench/rendezvous_load.cc) at each N, prints a
markdown table and, with --plot, draws it (bench/plots.py, lines over N).

    /usr/bin/python3 bench/rendezvous_load.py --ranks 1024 4096 16384 65536 \\
        --plot bench/results/rendezvous_load.png
    /usr/bin/python3 bench/rendezvous_load.py --ranks 256 --check   # ctest

--elastic adds the membership watch of every rank and a lost rank -> next
round; --layout full runs the host layout as it was before issue 31 (every
rank reading every rank's host). --check fails unless every run completed
with a complete row (no timing is asserted).
"""
import argparse
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
COLUMNS = ["ranks", "round (s)", "join (s)", "server CPU in round (s)", "heartbeat interval (ms)",
           "heartbeats/s",
           "heartbeat CPU (% of a core)", "lost -> round (s)", "server RSS (MB)"]
FIELDS = ["ranks", "round_s", "join_s", "round_cpu_s", "hb_interval_ms", "hb_per_s", "hb_cpu", "lost_s", "rss_mb"]


def parse_line(line):
    """key=value figures of one run -> dict (strings)."""
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def run(binary, ranks, args, timeout):
    cmd = [str(binary), "--ranks", str(ranks), "--per-host", str(args.per_host),
           "--hb-seconds", str(args.hb_seconds), "--hb-timeout-s", str(args.hb_timeout_s),
           "--layout", args.layout]
    if args.elastic:
        cmd.append("--elastic")
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"{ranks} ranks: no result within {timeout} s"
    lines = [l for l in out.stdout.splitlines() if l.startswith("ranks=")]
    if out.returncode != 0 or not lines:
        return None, f"{ranks} ranks: exit {out.returncode}: {out.stderr.strip()[-400:]}"
    return parse_line(lines[-1]), None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    p.add_argument("--per-host", type=int, default=8)
    p.add_argument("--hb-seconds", type=float, default=3)
    p.add_argument("--hb-timeout-s", type=int, default=5,
                   help="the liveness timeout the workers' heartbeat interval follows")
    p.add_argument("--layout", choices=["gather", "full"], default="gather")
    p.add_argument("--elastic", action="store_true")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run")
    p.add_argument("--binary", default=None,
                   help="rendezvous_load (default: $HVD_BUILD_DIR/bin, else build/bin)")
    p.add_argument("--plot", default=None, help="write the table as a PNG")
    p.add_argument("--check", action="store_true", help="fail unless every row is complete")
    args = p.parse_args()
    build = pathlib.Path(os.environ.get("HVD_BUILD_DIR", HERE.parent / "build"))
    binary = pathlib.Path(args.binary) if args.binary else build / "bin" / "rendezvous_load"
    if not binary.exists():
        sys.exit(f"rendezvous_load.py: no {binary}: build the target rendezvous_load")
    if args.plot:
        sys.path.insert(0, str(HERE))
        import plots
        why = plots.unavailable_reason()
        if why:
            sys.exit(f"rendezvous_load.py: --plot: {why}")

    rows, problems = [], []
    for n in args.ranks:
        figures, problem = run(binary, n, args, args.timeout)
        if problem:
            problems.append(problem)
            print(problem, file=sys.stderr)
            continue
        if figures.get("ok") != "1":
            problems.append(f"{n} ranks: the run did not complete: {figures}")
        rows.append([figures.get(f, "-") for f in FIELDS])
        print(" ".join(f"{c}={v}" for c, v in zip(FIELDS, rows[-1])), file=sys.stderr)

    title = (f"rendezvous: {args.per_host} ranks per host, layout {args.layout}"
             f"{', elastic' if args.elastic else ''}")
    print(f"### {title}\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS))
    for r in rows:
        print("| " + " | ".join("-" if v == "-1.000" else v for v in r) + " |")
    if args.plot and rows:
        plots.lines(args.plot, title, COLUMNS,
                    [[("nan" if v in ("-", "-1.000") else v) for v in r] for r in rows],
                    x=0, values=["round (s)", "heartbeat CPU (% of a core)", "server RSS (MB)"],
                    xlabel="ranks", ylabel="s / % / MB")
        print(f"\nplot: {args.plot}", file=sys.stderr)
    if args.check:
        for r in rows:
            figures = dict(zip(FIELDS, r))
            if int(figures["ranks"]) <= 0 or float(figures["round_s"]) <= 0 or \
                    float(figures["rss_mb"]) <= 0 or int(figures["hb_per_s"]) <= 0:
                problems.append(f"an incomplete row: {figures}")
            if args.elastic and float(figures["lost_s"]) <= 0:
                problems.append(f"no new round after a lost rank: {figures}")
        if len(rows) != len(args.ranks):
            problems.append(f"{len(rows)} rows of {len(args.ranks)}")
        if problems:
            sys.exit("rendezvous_load.py --check: " + "; ".join(problems))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
