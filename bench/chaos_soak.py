#!/usr/bin/python3
"""Chaos soak: the chaos job of tests/multihost/test_multihost_chaos.py run
again and again for N minutes, then a table of what it survived.

    /usr/bin/python3 bench/chaos_soak.py --build build [--minutes 30] [--seed S]
         [--faults-per-job 6] [--logs DIR]

Needs root and `ip netns` (the namespace hosts h1..h4 of tests/multihost,
netns.py, which cleans up after itself) and iptables; the delay fault needs
the build's bin/nfq_delayer (left out, saying why, without it).

Consecutive jobs, each an elastic job of 6 workers on h1..h3 (--min-np 4)
with its own seeded schedule (tests/multihost/chaos.py): the first 5 faults
one of each kind in a random order, the rest drawn at random; each fault
waits until the job is back at full size. Jobs start while less than
--minutes have passed (the last one runs to its end). The job seeds come
from --seed (random when not given); each job's seed is printed, and
`HVD_CHAOS_SEED=<job seed> HVD_CHAOS_FAULTS=<faults a job>` replays it in
tests/multihost/test_multihost_chaos.py (as the failure messages say). The
output of a job that broke an invariant goes to --logs.

The table: per fault kind, the faults injected, survived (the job was back
at full size afterwards and then ended well: exit 0, equal parameters equal
to the replay, no step lost, nothing left behind) and the recovery time
(from the fault's end to the first full-size step after it, chaos.py) median
and max; then the jobs completed, steps committed, steps lost (steps that
every rank of their world completed and that ran again: must be 0), steps
redone after an incomplete run (a killed worker completed a step the others
did not) and leftovers.
"""
import argparse
import os
import pathlib
import random
import secrets
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def fmt(values, how):
    return f"{how(values):.1f}" if values else "-"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="build directory (bin/, lib/, python/)")
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=None, help="seed of the job seeds (default random)")
    p.add_argument("--faults-per-job", type=int, default=6)
    p.add_argument("--logs", default=None, help="where failed jobs' output goes "
                   "(default a new directory under /tmp)")
    args = p.parse_args()

    build = pathlib.Path(args.build).resolve()
    os.environ["HVD_BUILD_DIR"] = str(build)
    sys.path.insert(0, str(ROOT / "tests" / "multihost"))
    import netns  # noqa: E402
    import chaos  # noqa: E402
    from conftest import Agents  # noqa: E402

    reason = netns.unavailable_reason()
    if reason:
        sys.exit(f"chaos_soak: {reason}")
    for kind, why in chaos.unavailable_kinds().items():
        if kind == "drop":
            sys.exit(f"chaos_soak: {why}")
        print(f"chaos_soak: the {kind} fault is left out: {why}", flush=True)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    logs = pathlib.Path(args.logs or tempfile.mkdtemp(prefix=f"chaos-soak-{seed}-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"chaos_soak: seed {seed}, {args.minutes:g} minutes, {args.faults_per_job} faults a "
          f"job, logs of failed jobs in {logs}", flush=True)
    rng = random.Random(seed)

    netns.install_sigterm_teardown()
    cluster = netns.Cluster(4)
    cluster.setup()
    outcomes, failures = [], []
    start = time.monotonic()
    try:
        secret = cluster.workdir / "secret"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        agents = Agents(cluster, str(secret), lambda: None)
        agents.ensure(tls=False)
        try:
            while time.monotonic() - start < args.minutes * 60:
                job_seed = rng.randrange(1, 2**31)
                workdir = cluster.workdir / f"job-{len(outcomes) + 1}"
                workdir.mkdir()
                plan = chaos.schedule(job_seed, args.faults_per_job)
                out = chaos.ChaosRun(cluster, agents, str(secret), workdir, plan, job_seed,
                                     log=lambda line: print(line, flush=True)).run()
                problems = chaos.check(out)
                outcomes.append((out, problems))
                print(chaos.summary(out), flush=True)
                if problems:
                    failures.append(out.seed)
                    log = logs / f"job-{len(outcomes)}-seed-{out.seed}.log"
                    log.write_text("\n".join(problems) + "\n\n" + chaos.summary(out) +
                                   "\n\nstdout:\n" + out.stdout + "\nstderr:\n" + out.stderr)
                    print("\n".join(problems) + f"\n(output in {log})", flush=True)
                print(f"chaos_soak: job {len(outcomes)} (seed {out.seed}) "
                      f"{'FAILED' if problems else 'ok'}; {(time.monotonic() - start) / 60:.1f} "
                      f"of {args.minutes:g} minutes", flush=True)
        finally:
            agents.stop_all()
    finally:
        cluster.teardown()
    elapsed = time.monotonic() - start
    if cluster.leaks:
        print(f"chaos_soak: teardown killed leaked processes: {cluster.leaks}")
    print_table(chaos, seed, outcomes, failures, elapsed)
    sys.exit(1 if failures else 0)


def print_table(chaos, seed, outcomes, failures, elapsed):
    print(f"\nChaos soak, seed {seed}: {len(outcomes)} jobs in {elapsed / 60:.1f} minutes\n")
    print("| fault | injected | survived | skipped | recovery median (s) | recovery max (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind in chaos.KINDS:
        injected = survived = skipped = 0
        times = []
        for out, problems in outcomes:
            for f in out.faults:
                if f.kind != kind:
                    continue
                if f.skipped:
                    skipped += 1
                    continue
                injected += 1
                if out.survived(f) and not problems:
                    survived += 1
                if f.recovery is not None:
                    times.append(f.recovery)
        print(f"| {kind} | {injected} | {survived} | {skipped} | {fmt(times, statistics.median)} "
              f"| {fmt(times, max)} |")
    completed = sum(1 for out, _ in outcomes if out.returncode == 0)
    analyses = [out.analysis for out, _ in outcomes if out.analysis is not None]
    committed = sum(len(a.sizes) for a in analyses)
    lost = sum(len(a.lost) for a in analyses)
    redone = sum(len(a.redone) for a in analyses)
    leftovers = sum(1 for out, _ in outcomes if out.strays or out.root_strays or out.shm_left)
    print()
    print("| | |")
    print("| --- | ---: |")
    print(f"| jobs completed (exit 0) | {completed} of {len(outcomes)} |")
    print(f"| jobs with every invariant | {len(outcomes) - len(failures)} of {len(outcomes)} |")
    print(f"| steps committed | {committed} |")
    print(f"| steps lost | {lost} |")
    print(f"| steps redone after an incomplete run | {redone} |")
    print(f"| jobs leaving a process or /dev/shm file | {leftovers} |")
    if failures:
        print(f"\nfailed job seeds (HVD_CHAOS_SEED with HVD_CHAOS_FAULTS="
              f"{len(outcomes[0][0].faults)} replays each): {', '.join(map(str, failures))}")


if __name__ == "__main__":
    main()
