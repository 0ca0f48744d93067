#!/usr/bin/python3
"""Chaos soak: chaos jobs of tests/multihost/chaos.py run again and again for N
minutes, each with its own random plan from the whole fault model, then a
table of what they survived.

    /usr/bin/python3 bench/chaos_soak.py --build build [--minutes 30] [--seed S]
         [--faults-per-job 6] [--load 2] [--logs DIR]

Needs root and `ip netns` (the namespace hosts h1..h4 of tests/multihost,
netns.py, which cleans up after itself) and iptables; the delay fault needs
the build's bin/nfq_delayer (left out, saying why, without it).

Consecutive jobs, each an elastic job of 6 workers on h1..h3 (--min-np 3, two
hot spares) beside --load busy processes, with its own seeded plan
(tests/multihost/chaos_plan.py): --faults-per-job faults drawn from every
combination of fault kind and phase (kill -9 or SIGSTOP before hvd.init(),
in the first round, in a later round, of a waiting spare, during a
promotion, inside commit, inside the sync, during a recovery, in training;
two workers at once, agent restart, DROP, delay), each once before any
repeats. Jobs start while less than --minutes have passed (the last one runs
to its end). The job seeds come from --seed (random when not given); each
job's seed is printed, with the command that replays it in
tests/multihost/test_multihost_chaos.py (HVD_CHAOS_SEED, HVD_CHAOS_FAULTS,
HVD_CHAOS_MODEL=all). The output of a job that broke an invariant goes to
--logs.

The table: per fault kind and phase, the faults injected, survived (the job
was back at full size afterwards and then ended well: every invariant of
chaos.py held), skipped (could not be injected: no waiting spare, an armed
fault that never fired), the recovery time (from the fault's end to the
first full-size step after it) median and max, and the committed steps lost
after it (steps that every rank of their world completed and that ran
again: 0, or hvdrun said the commit was lost); then the jobs completed,
steps committed, steps lost, steps redone after an incomplete run (a killed
worker completed a step the others did not), hvdrun's lost-state warnings,
the runtime's no-progress verdicts (ranks put out of step: the worker never
is) and leftovers.
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
    p.add_argument("--load", type=int, default=2, help="busy processes beside each job")
    p.add_argument("--logs", default=None, help="where failed jobs' output goes "
                   "(default a new directory under /tmp)")
    p.add_argument("--log-level", default=None, help="HVD_LOG_LEVEL of hvdrun and the workers "
                   "(info: each Join, round and recovery in a failed job's log)")
    args = p.parse_args()
    if args.log_level:
        os.environ["HVD_LOG_LEVEL"] = args.log_level

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
          f"job, {args.load} busy processes beside each, logs of failed jobs in {logs}",
          flush=True)
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
                plan = chaos.schedule(job_seed, args.faults_per_job, chaos.COMBOS)
                hint = chaos.replay_hint(job_seed, args.faults_per_job, True, args.load)
                out = chaos.ChaosRun(cluster, agents, str(secret), workdir, plan, job_seed,
                                     log=lambda line: print(line, flush=True), load=args.load,
                                     hint=hint).run()
                problems = chaos.check(out, every_fault=False)
                chaos.attribute_losses(out)
                outcomes.append((out, problems))
                print(chaos.summary(out), flush=True)
                if problems:
                    failures.append(f"seed {out.seed} ({hint})")
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
    print("| fault | phase | injected | survived | skipped | recovery median (s) "
          "| recovery max (s) | steps lost |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind, phase in chaos.COMBOS:
        injected = survived = skipped = lost = 0
        times = []
        for out, problems in outcomes:
            for f in out.faults:
                if (f.kind, f.phase) != (kind, phase):
                    continue
                if f.skipped:
                    skipped += 1
                    continue
                injected += 1
                lost += f.lost
                if out.survived(f) and not problems:
                    survived += 1
                if f.recovery is not None:
                    times.append(f.recovery)
        if injected or skipped:
            print(f"| {kind} | {phase} | {injected} | {survived} | {skipped} "
                  f"| {fmt(times, statistics.median)} | {fmt(times, max)} | {lost} |")
    completed = sum(1 for out, _ in outcomes if out.returncode == 0)
    analyses = [out.analysis for out, _ in outcomes if out.analysis is not None]
    committed = sum(len(a.sizes) for a in analyses)
    lost = sum(len(a.lost) for a in analyses)
    redone = sum(len(a.redone) for a in analyses)
    warnings = sum(len(out.losses or []) for out, _ in outcomes)
    verdicts = sum(chaos.no_progress(out.stderr) for out, _ in outcomes)
    leftovers = sum(1 for out, _ in outcomes if out.strays or out.root_strays or out.shm_left)
    print()
    print("| | |")
    print("| --- | ---: |")
    print(f"| jobs completed (exit 0) | {completed} of {len(outcomes)} |")
    print(f"| jobs with every invariant | {len(outcomes) - len(failures)} of {len(outcomes)} |")
    print(f"| steps committed | {committed} |")
    print(f"| steps lost | {lost} |")
    print(f"| hvdrun's lost-state warnings | {warnings} |")
    print(f"| steps redone after an incomplete run | {redone} |")
    print(f"| no-progress verdicts (ranks put out of step) | {verdicts} |")
    print(f"| jobs leaving a process or /dev/shm file | {leftovers} |")
    if failures:
        print(f"\nfailed jobs: {'; '.join(failures)}")


if __name__ == "__main__":
    main()
