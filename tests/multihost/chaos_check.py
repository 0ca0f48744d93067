"""What a chaos run (tests/multihost/chaos.py) must still get right: the
analysis of the job's COMMIT lines, what outlived the job, and the invariants
(chaos.py's docstring lists them)."""
import dataclasses
import os
import time

from chaos_plan import COMMIT, NP, RECOVERY_TIMEOUT_S, replay_hint

# ---- the job's output, analysed -------------------------------------------------

@dataclasses.dataclass
class Analysis:
    sizes: dict            # step -> size of its last run (the one the parameters kept)
    lost: list             # steps run again after a complete run: the count went back
    redone: list           # steps run again after an incomplete run (a victim's only)
    missing: list          # steps 0..steps-1 never committed
    complete_max: int      # highest complete step


def analyse(stdout, steps):
    """The COMMIT lines of hvdrun's stdout in the order they arrived (see check())."""
    groups = {}            # step -> [[size, set(slots)], ...] in order
    lost, redone = set(), set()
    for line in stdout.splitlines():
        m = COMMIT.match(line)
        if not m:
            continue
        slot, step, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
        runs = groups.setdefault(step, [])
        if not runs or runs[-1][0] != size or slot in runs[-1][1]:
            if runs:
                if any(len(s) >= n for n, s in runs):
                    lost.add(step)
                else:
                    redone.add(step)
            runs.append([size, set()])
        runs[-1][1].add(slot)
    complete = [s for s, runs in groups.items() if any(len(sl) >= n for n, sl in runs)]
    return Analysis(sizes={s: runs[-1][0] for s, runs in groups.items()},
                    lost=sorted(lost), redone=sorted(redone - lost),
                    missing=[s for s in range(steps) if s not in groups],
                    complete_max=max(complete, default=-1))

def shm_files():
    try:
        return {f for f in os.listdir("/dev/shm") if f.startswith("hvd-")}
    except OSError:
        return set()



def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


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
        if mark in cmd and int(entry) != os.getpid() and _alive(int(entry)):
            found[int(entry)] = cmd
    return found


def _job_processes(mark, timeout):
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
    returncode: int = None
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    analysis: Analysis = None
    finals: dict = None
    replay_ok: bool = None
    strays: dict = None
    root_strays: list = None
    shm_left: list = None
    error: str = ""         # the run itself broke (a fault could not be injected, ...)

    def survived(self, fault):
        return (not fault.skipped and fault.full_at is not None and self.returncode == 0)


# ---- the checks --------------------------------------------------------------------

def check(out):
    """The invariants (module docstring) as a list of problems; [] when all hold."""
    hint = replay_hint(out.seed, len(out.faults))
    problems = []
    if out.error:
        problems.append(f"the chaos run broke: {out.error}")
    for f in out.faults:
        if not f.skipped and f.start is not None and f.full_at is None:
            problems.append(f"{f.describe()} ({f.target}): the job was not back at full size "
                            f"{NP} within {RECOVERY_TIMEOUT_S} s of the fault's end")
    if out.returncode != 0:
        problems.append(f"(a) hvdrun exited {out.returncode}")
    a = out.analysis
    if a is not None:
        if a.lost:
            problems.append(f"(c) the committed step count went back: steps {a.lost} were run "
                            "again after every rank of their world had completed them")
        if a.missing:
            problems.append(f"(c) steps never committed: {a.missing[:20]}"
                            f"{' ...' if len(a.missing) > 20 else ''}")
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


def summary(out):
    """Lines describing the run: the faults with their times, the steps."""
    lines = [f"seed {out.seed}: hvdrun exit {out.returncode} after {out.duration:.1f} s, "
             f"{out.steps} steps"]
    for f in out.faults:
        if f.skipped:
            lines.append(f"  skipped  {f.describe()}: {f.skipped}")
        else:
            rec = f"{f.recovery:.1f} s" if f.recovery is not None else "never"
            start = f"{f.start:.1f}" if f.start is not None else "?"
            end = f"{f.end:.1f}" if f.end is not None else "?"
            lines.append(f"  {start:>6}-{end:<6} {f.describe()} [{f.target}] -> full size "
                         f"after {rec}{' (reset)' if f.reset else ''}, {f.steps_used} steps"
                         f"{' ' + f.note if f.note else ''}")
    a = out.analysis
    if a is not None:
        lines.append(f"  steps: highest complete {a.complete_max}, lost {a.lost}, "
                     f"redone after an incomplete run {a.redone}, missing {len(a.missing)}")
    return "\n".join(lines)
