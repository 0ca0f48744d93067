"""What a chaos run (tests/multihost/chaos.py) must still get right: the
analysis of the job's COMMIT lines, hvdrun's lost-state warnings, what
outlived the job, and the invariants (chaos.py's docstring lists them)."""
import dataclasses
import os
import re
import time

from chaos_plan import (COMMIT, HEARTBEAT_S, NP, PROGRESS_BOUND_S, RECOVERY_TIMEOUT_S,
                        replay_hint)
from chaos_procs import alive

# hvdrun: warning: commit 12 (the last, held by ranks 0, 1) was lost with them; the job
# starts again from commit 0 (the start)   (docs/elastic.md, "Lost state")
LOST = re.compile(r"hvdrun: warning: commit (\d+) \(the last[^)]*\) was lost with (?:it|them); "
                  r"the job starts again from commit (\d+)")

# ---- the job's output, analysed -------------------------------------------------

@dataclasses.dataclass
class Analysis:
    sizes: dict            # step -> size of its last run (the one the parameters kept)
    lost: dict             # step -> job time it ran again after a complete run
    redone: list           # steps run again after an incomplete run (a victim's only)
    missing: list          # steps 0..steps-1 never committed
    complete_max: int      # highest complete step
    longest_gap: tuple     # (seconds, job time it ended) without a COMMIT line


def analyse(arrivals, steps):
    """The COMMIT lines of hvdrun's stdout, [(job time, line)] in the order they
    arrived. A step's run is the COMMIT lines at one size from distinct slots;
    it is complete when as many slots as the size printed it."""
    groups = {}            # step -> [[size, set(slots)], ...] in order
    lost, redone = {}, set()
    gap, last = (0.0, 0.0), None
    for t, line in arrivals:
        m = COMMIT.match(line)
        if not m:
            continue
        if last is not None and t - last > gap[0]:
            gap = (t - last, t)
        last = t
        slot, step, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
        runs = groups.setdefault(step, [])
        if not runs or runs[-1][0] != size or slot in runs[-1][1]:
            if runs:
                if any(len(s) >= n for n, s in runs):
                    lost.setdefault(step, t)
                else:
                    redone.add(step)
            runs.append([size, set()])
        runs[-1][1].add(slot)
    complete = [s for s, runs in groups.items() if any(len(sl) >= n for n, sl in runs)]
    return Analysis(sizes={s: runs[-1][0] for s, runs in groups.items()},
                    lost=dict(sorted(lost.items())), redone=sorted(redone - set(lost)),
                    missing=[s for s in range(steps) if s not in groups],
                    complete_max=max(complete, default=-1), longest_gap=gap)


def state_losses(stderr):
    """[(commit lost, commit the job starts again from)] of hvdrun's warnings."""
    return [(int(m.group(1)), int(m.group(2))) for m in LOST.finditer(stderr)]


def shm_files():
    try:
        return {f for f in os.listdir("/dev/shm") if f.startswith("hvd-")}
    except OSError:
        return set()


def _root_processes(mark):
    """{pid: cmdline} of the live processes whose command line contains `mark`
    (the run's work directory: hvdrun's discovery script, the workers' marker)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if mark in cmd and int(entry) != os.getpid() and alive(int(entry)):
            found[int(entry)] = cmd
    return found


def job_processes(mark, timeout):
    """['pid cmdline'] of the job's processes (any namespace) still alive after
    polling for `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        left = _root_processes(mark)
        if not left or time.monotonic() > deadline:
            return [f"{p} {c}" for p, c in sorted(left.items())]
        time.sleep(0.2)


# ---- the run ---------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    seed: int
    steps: int
    faults: list
    load: int = 0
    returncode: int = None
    stdout: str = ""
    arrivals: list = None   # [(job time, stdout line)]
    stderr: str = ""        # hvdrun's stderr, each line after its job time
    duration: float = 0.0
    analysis: Analysis = None
    losses: list = None     # state_losses(stderr)
    finals: dict = None
    replay_ok: bool = None
    strays: dict = None
    root_strays: list = None
    shm_left: list = None
    stalled: str = ""       # the run stopped a job that made no progress
    snapshot: list = None   # the job's processes then
    error: str = ""         # the run itself broke (a fault could not be injected, ...)
    hint: str = ""          # how to replay it (chaos_plan.replay_hint)

    def survived(self, fault):
        return (not fault.skipped and fault.full_at is not None and self.returncode == 0)


def attribute_losses(out):
    """Sets each fault's `lost`: the lost steps whose run again began after it
    started and before the next fault did."""
    started = sorted((f.start, i) for i, f in enumerate(out.faults) if f.start is not None)
    for f in out.faults:
        f.lost = 0
    for t in (out.analysis.lost.values() if out.analysis else ()):
        before = [i for s, i in started if s <= t]
        if before:
            out.faults[before[-1]].lost += 1


# ---- the checks --------------------------------------------------------------------

def check(out, every_fault=True):
    """The invariants (chaos.py's docstring) as a list of problems; [] when all hold.
    every_fault: a fault of the plan that was not injected is a problem too."""
    hint = out.hint or replay_hint(out.seed)
    problems = _false_deaths(out)
    if out.error:
        problems.append(f"the chaos run broke: {out.error}")
    if out.stalled:
        problems.append(f"(e) the job stalled: {out.stalled}; its processes: {out.snapshot}")
    for f in out.faults:
        if f.skipped and every_fault:
            problems.append(f"(f) {f.describe()} was not injected: {f.skipped}")
        elif not f.skipped and f.start is not None and f.full_at is None:
            problems.append(f"(f) {f.describe()} ({f.target}): the job was not back at full "
                            f"size {NP} within {RECOVERY_TIMEOUT_S} s of the fault's end")
    if out.returncode != 0:
        problems.append(f"(a) hvdrun exited {out.returncode}")
        if out.returncode is not None and not out.stalled and "hvdrun: error:" not in out.stderr:
            problems.append("(e) hvdrun ended without an `hvdrun: error:` line naming the cause")
    a = out.analysis
    if a is not None:
        problems += _lost_steps(a, out.losses or [])
        if a.missing and out.returncode == 0:
            problems.append(f"(c) steps never committed: {a.missing[:20]}"
                            f"{' ...' if len(a.missing) > 20 else ''}")
        if a.longest_gap[0] > PROGRESS_BOUND_S:
            problems.append(f"(e) no commit for {a.longest_gap[0]:.1f} s (until "
                            f"{a.longest_gap[1]:.1f} s), over --elastic-timeout + the "
                            f"heartbeat timeout ({PROGRESS_BOUND_S} s)")
    finals = out.finals or {}
    if out.returncode == 0:
        if sorted(finals) != list(range(NP)):
            problems.append(f"(b) final parameters from ranks {sorted(finals)}, want 0..{NP - 1}")
        elif any(v != finals[0] for v in finals.values()):
            problems.append(f"(b) the final parameters differ between ranks: {finals}")
        elif out.replay_ok is False:
            problems.append("(b) the final parameters differ from a replay of the committed steps")
    if out.strays:
        problems.append(f"(d) processes left in the namespaces: {out.strays}")
    if out.root_strays:
        problems.append(f"(d) processes of the job left: {out.root_strays}")
    if out.shm_left:
        problems.append(f"(d) /dev/shm files left: {out.shm_left}")
    return [f"{p} [{hint}]" for p in problems]


VERDICT = re.compile(r"^ *([\d.]+) hvdrun: .* on host (\S+) .*(?:stopped responding: no "
                     r"heartbeat|has been stopped \(state T in /proc\)|has not reached hvd.init)",
                     re.M)


def verdicts(out):
    """hvdrun's verdicts on hung or silent processes that no fault explains but a
    stop could: [(job time, host)] outside the drops (a host cut off is silent
    too) and those on slow starts (none is slow here: always false)."""
    drops = [f for f in out.faults if f.kind == "drop" and f.start is not None]
    hung, slow = [], []
    for m in VERDICT.finditer(out.stderr):
        t, host = float(m.group(1)), m.group(2)
        if "has not reached" in m.group(0):
            slow.append((t, host))
        elif not any(f.host == host and f.start <= t <= (f.end or t) + HEARTBEAT_S + 2
                     for f in drops):
            hung.append((t, host))
    return hung, slow


def _false_deaths(out):
    """(g) under load no process is taken for hung that was not: at most one
    verdict per process stopped, none for a slow start (none is slow here)."""
    stops = sum(1 for f in out.faults if f.kind == "stop" and f.start is not None)
    hung, slow = verdicts(out)
    problems = []
    if len(hung) > stops:
        problems.append(f"(g) hvdrun gave up {len(hung)} processes as stopped or silent "
                        f"({hung}), but only {stops} were stopped: a false death")
    if slow:
        problems.append(f"(g) hvdrun gave up processes as slow to start: {slow}")
    return problems


def _lost_steps(a, losses):
    """(c): a step run again after a complete run is lost; only allowed inside a
    loss hvdrun announced (it restarted from commit M, commit N was lost: steps
    M..N; N + 1 too, a commit that had not reached hvdrun yet)."""
    unsaid = [s for s in a.lost if not any(m <= s <= n + 1 for n, m in losses)]
    problems = []
    if unsaid:
        problems.append(f"(c) committed steps were lost without hvdrun's `commit N was lost` "
                        f"warning: steps {spans(unsaid)} ran again after every rank of their "
                        f"world had completed them (warnings: {losses})")
    if losses and not a.lost:
        problems.append(f"(c) hvdrun warned that commits {losses} (lost, restart) were lost, "
                        "but no completed step ran again")
    return problems


def no_progress(stderr):
    """The runtime's no-progress verdicts (ranks waiting for different tensors: the
    program is always in step, so the runtime put them out of step), counted once
    per time they came (one line per rank)."""
    return len({line.split()[0] for line in stderr.splitlines() if "] no progress for " in line})


def spans(steps):
    """'0-41, 57' for the steps 0..41 and 57 ('-' for none)."""
    out, steps = [], sorted(steps)
    for s in steps:
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in out) or "-"


def summary(out):
    """Lines describing the run: the faults with their times, the steps."""
    lines = [f"seed {out.seed}: hvdrun exit {out.returncode} after {out.duration:.1f} s, "
             f"{out.steps} steps, {out.load} busy processes beside it"]
    for f in out.faults:
        if f.skipped:
            lines.append(f"  skipped  {f.describe()}: {f.skipped}")
        else:
            rec = f"{f.recovery:.1f} s" if f.recovery is not None else "never"
            start = f"{f.start:.1f}" if f.start is not None else "?"
            end = f"{f.end:.1f}" if f.end is not None else "?"
            lines.append(f"  {start:>6}-{end:<6} {f.describe()} [{f.target}] -> full size "
                         f"after {rec}{' (reset)' if f.reset else ''}"
                         f"{' ' + f.note if f.note else ''}")
    a = out.analysis
    if a is not None:
        lines.append(f"  steps: highest complete {a.complete_max}, lost {spans(a.lost)}, "
                     f"redone after an incomplete run {spans(a.redone)}, missing {len(a.missing)}, "
                     f"longest time without a commit {a.longest_gap[0]:.1f} s; "
                     f"lost-state warnings {out.losses}; no-progress verdicts "
                     f"{no_progress(out.stderr)}")
    return "\n".join(lines)
