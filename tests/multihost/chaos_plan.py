"""The chaos schedule (tests/multihost/chaos.py has the whole story): the
job's shape, the fault kinds, a seeded plan of faults, and which kinds this
machine cannot inject."""
import dataclasses
import os
import pathlib
import random
import re
import subprocess

from conftest import BIN_DIR

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")
KINDS = ("worker_kill", "worker_stop", "agent_restart", "drop", "delay")
JOB_HOSTS = ("h1", "h2", "h3")
SLOTS = 2
NP = SLOTS * len(JOB_HOSTS)
MIN_NP = NP - SLOTS          # one host down at most
HEARTBEAT_S = 3
RECOVERY_TIMEOUT_S = 60
DROP_S = 10
DELAY_S = 8
DELAY_MS, JITTER_MS = 40, 20  # 40 + uniform 0..20 ms: 50 +- 10
STEP_PAUSE_S = 0.05
COMMIT = re.compile(r"^\[(\d+)\]<stdout>:COMMIT (\d+) (\d+)$")
SEED_ENV = "HVD_CHAOS_SEED"
FAULTS_ENV = "HVD_CHAOS_FAULTS"
# Steps a fault lets the job commit from its injection to full size again
# (2 cores, 6 workers; the job goes on at 4 while a host is out).
STEPS_USED = {"worker_kill": lambda f: 30, "worker_stop": lambda f: 30,
              "agent_restart": lambda f: 12 * f.hold + 150, "drop": lambda f: 220,
              "delay": lambda f: 20}


def seed_from_env():
    """HVD_CHAOS_SEED when set, else a fresh random seed."""
    value = os.environ.get(SEED_ENV)
    return int(value) if value else random.SystemRandom().randrange(1, 2**31)


def replay_hint(seed, count=None):
    more = f" {FAULTS_ENV}={count}" if count is not None and count != len(KINDS) else ""
    return f"replay with {SEED_ENV}={seed}{more}"


def delayer_path():
    """nfq_delayer (the program HVD_NFQ_DELAYER names, else the build's bin/), or
    None when not built."""
    path = pathlib.Path(os.environ.get("HVD_NFQ_DELAYER") or BIN_DIR / "nfq_delayer")
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def unavailable_kinds():
    """{kind: why} for the faults this machine cannot inject."""
    why = {}
    if subprocess.run(["sh", "-c", "command -v iptables"], capture_output=True).returncode != 0:
        why["drop"] = why["delay"] = "no iptables"
    elif delayer_path() is None:
        path = os.environ.get("HVD_NFQ_DELAYER") or BIN_DIR / "nfq_delayer"
        why["delay"] = f"nfq_delayer is not built ({path})"
    return why


# ---- the schedule ---------------------------------------------------------------

@dataclasses.dataclass
class Fault:
    kind: str
    host: str
    gap: float              # s to wait, once the job is back at full size, before injecting
    hold: float = 0.0       # stop: SIGSTOP time; agent_restart: time without an agent;
                            # drop/delay: how long the rules stay
    pick: int = 0           # which worker of the host (index in slot order)
    # filled in by the run (seconds since the job started)
    start: float = None
    end: float = None
    full_at: float = None   # first full-size COMMIT after `end` (see the module docstring)
    reset: bool = False     # a COMMIT below full size came between start and full_at
    steps_used: int = None  # steps committed from the injection to full_at
    target: str = ""        # what was hit: "slot 3 pid 1234", "agent pid 99", ...
    skipped: str = ""       # why it was not injected
    note: str = ""

    @property
    def recovery(self):
        return None if self.full_at is None or self.end is None else self.full_at - self.end

    def describe(self):
        what = {"worker_kill": "kill -9 a worker",
                "worker_stop": f"SIGSTOP a worker for {self.hold:.1f} s",
                "agent_restart": f"kill -9 the agent, restart after {self.hold:.1f} s",
                "drop": f"DROP to/from hvdrun for {self.hold:.0f} s",
                "delay": f"delay {DELAY_MS}+0..{JITTER_MS} ms for {self.hold:.0f} s"}[self.kind]
        return f"{self.kind} on {self.host}: {what}"


def schedule(seed, count, kinds=KINDS, hosts=JOB_HOSTS, every_kind=True):
    """`count` faults drawn by random.Random(seed). With every_kind the first
    len(kinds) faults are each kind once, in a random order; the rest (or all,
    without it) are drawn uniformly. A plan of n faults is the first n of a
    longer one with the same seed."""
    rng = random.Random(seed)
    kinds = list(kinds)
    first = kinds[:]
    rng.shuffle(first)
    plan = []
    for i in range(count):
        kind = first[i] if every_kind and i < len(first) else rng.choice(kinds)
        fault = Fault(kind=kind, host=rng.choice(hosts), gap=rng.uniform(2.0, 4.0),
                      pick=rng.randrange(SLOTS))
        if kind == "worker_stop":
            fault.hold = rng.uniform(1.0, 5.0)   # over HEARTBEAT_S: killed and replaced
        elif kind == "agent_restart":
            fault.hold = rng.uniform(0.5, 3.0)
        elif kind == "drop":
            fault.hold = DROP_S
        elif kind == "delay":
            fault.hold = DELAY_S
        plan.append(fault)
    return plan


def faults_from_env(default):
    """HVD_CHAOS_FAULTS (the number of faults) when set, else `default`."""
    value = os.environ.get(FAULTS_ENV)
    return int(value) if value else default
