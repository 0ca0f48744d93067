"""The chaos fault model and its seeded schedules (tests/multihost/chaos.py
has the whole story): the job's shape, the fault kinds and the phases they
hit, the plans CI runs, and which kinds this machine cannot inject."""
import dataclasses
import os
import pathlib
import random
import re
import subprocess

from conftest import BIN_DIR

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")

# ---- the job --------------------------------------------------------------------
JOB_HOSTS = ("h1", "h2", "h3")
SLOTS = 2
NP = SLOTS * len(JOB_HOSTS)
MIN_NP = NP - SLOTS - 1      # a host down and one more worker lost: the job goes on
SPARES = 2
LOAD_PROCS = 2               # busy processes beside the job (CI: always)
# 2 cores shared by 6 workers, 2 spares, hvdrun, 3 agents and 2 busy loops: a
# heartbeat (every 400 ms here) is late by tens of ms; 4 s leaves a margin of
# two orders of magnitude and keeps a hang's cost low.
HEARTBEAT_S = 4
ELASTIC_TIMEOUT_S = 40       # above --start-timeout (30): a slow starter is replaced
PROGRESS_BOUND_S = ELASTIC_TIMEOUT_S + HEARTBEAT_S  # longest time without a commit
RECOVERY_TIMEOUT_S = 60      # back at full size after a fault
DROP_S = 10
DELAY_S = 8
DELAY_MS, JITTER_MS = 40, 20  # 40 + uniform 0..20 ms: 50 +- 10
STEP_PAUSE_S = 0.05
STEP_CAP = 100000            # the job ends through ELASTIC_END_FILE long before
COMMIT = re.compile(r"^\[(\d+)\]<stdout>:COMMIT (\d+) (\d+)$")
SEED_ENV = "HVD_CHAOS_SEED"
FAULTS_ENV = "HVD_CHAOS_FAULTS"

# ---- the fault model ------------------------------------------------------------
# A process fault (kill -9 or SIGSTOP: a hung process) in each phase of an
# elastic job's life, plus the kinds that hit more than one process.
ACTIONS = ("kill", "stop")
PHASES = ("before_init",  # a worker starting: a first one, a replacement or a spare
          "first_round",  # right after its Join of round 0 (HVD_TEST_FAULT)
          "later_round",  # right after its Join of a round formed by a reset
          "spare_wait",   # a hot spare waiting in hvd.init()
          "promotion",    # the spare being promoted into a failed worker's slot
          "commit",       # inside state.commit()
          "sync",         # inside the state sync after a reset
          "recovery",     # a second fault while the job recovers from a kill
          "train")        # a worker in the middle of training
OTHER_KINDS = ("double",          # two workers killed at once
               "wipe",            # every worker killed at once: no holder of the state survives
               "agent_restart",   # kill -9 of a host's agent, a new one later
               "drop",            # iptables DROP between a host and hvdrun
               "delay")           # 50 +- 10 ms on a host's packets (nfq_delayer)
KINDS = ACTIONS + OTHER_KINDS
COMBOS = tuple((a, p) for p in PHASES for a in ACTIONS) + tuple((k, "train") for k in OTHER_KINDS)
# Faults that hit the first workers; at most NP - MIN_NP of them, on distinct slots.
START_LIMIT = NP - MIN_NP
# CI: within the suite's budget (about 90 s on 2 cores), a hang (SIGSTOP) in
# every phase, kill -9 where it takes another path (a round's key exchange, a
# commit, a sync, a second fault during a recovery), two workers at once and
# every worker at once (the lost state: hvdrun must say so);
# the rest of COMBOS (kill before hvd.init(), of a waiting or promoted spare,
# in the middle of training, agent restart, DROP, delay) runs in the soak
# (bench/chaos_soak.py) and in the tests of those kinds.
CI_COMBOS = tuple((("stop", p) for p in PHASES if p not in ("recovery", "train"))) + (
    ("kill", "first_round"), ("kill", "later_round"), ("kill", "commit"), ("kill", "sync"),
    ("kill", "recovery"), ("double", "train"), ("wipe", "train"))
# CI runs these seeds, each one job with every combination of CI_COMBOS once
# (test_multihost_chaos.py checks that each plan covers them).
CI_SEEDS = (3,)
MODEL_ENV = "HVD_CHAOS_MODEL"   # "all": the plan covers COMBOS instead of CI_COMBOS
LOAD_ENV = "HVD_CHAOS_LOAD"

# Steps a fault lets the job commit before it is back at full size (estimate
# used for the job's timeout only).
FAULT_SECONDS = {"agent_restart": 15, "drop": DROP_S + 12, "delay": DELAY_S + 2}


def seed_from_env():
    """HVD_CHAOS_SEED when set, else None (the caller's default seeds)."""
    value = os.environ.get(SEED_ENV)
    return int(value) if value else None


def combos_from_env():
    """The combinations a test's plan covers: CI_COMBOS, or COMBOS with HVD_CHAOS_MODEL=all."""
    return COMBOS if os.environ.get(MODEL_ENV) == "all" else CI_COMBOS


def replay_hint(seed, count=None, model_all=False, load=LOAD_PROCS):
    """How to run a job's plan again in test_multihost_chaos.py."""
    more = f" {FAULTS_ENV}={count}" if count is not None else ""
    more += f" {MODEL_ENV}=all" if model_all else ""
    more += f" {LOAD_ENV}={load}" if load != LOAD_PROCS else ""
    return f"replay with {SEED_ENV}={seed}{more} ctest --test-dir build -R multihost_chaos"


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


# ---- one fault ----------------------------------------------------------------------

@dataclasses.dataclass
class Fault:
    kind: str
    phase: str
    host: str = ""          # the host of the worker (or spare, agent, link) hit
    gap: float = 0.0        # s to wait, once the job is back at full size, before injecting
    hold: float = 0.0       # train stop: SIGSTOP time; agent_restart: time without an agent;
                            # drop/delay: how long the rules stay
    pick: int = 0           # which worker/spare of the host (index in slot/id order)
    pick2: int = 0          # a second process (double, recovery, triggers)
    host2: str = ""         # its host (double)
    rank: int = 0           # commit/sync/later_round: the rank that faults itself
    delay: float = 0.0      # before_init: s after its imports; recovery: after the first
                            # kill; promotion: between the worker's kill and the spare's
    point: str = "joined"   # first/later_round: after the Join or once connected
    who: str = ""           # before_init: "slot:S" (a first worker), replacement, spare
    # filled in by the run (seconds since the job started)
    start: float = None
    end: float = None       # the fault complete: the kill, the stop, SIGCONT, the rules gone
    full_at: float = None   # first full-size COMMIT after `end`
    reset: bool = False     # a COMMIT below full size came between start and full_at
    steps_used: int = None  # steps committed from the injection to full_at
    target: str = ""        # what was hit: "slot 3 pid 1234", "agent pid 99", ...
    skipped: str = ""       # why it was not injected
    note: str = ""
    lost: int = 0           # committed steps run again because of it (a lost commit)

    @property
    def at_start(self):
        return self.phase == "first_round" or (self.phase == "before_init" and
                                               self.who.startswith("slot:"))

    @property
    def recovery(self):
        return None if self.full_at is None or self.end is None else self.full_at - self.end

    def describe(self):
        act = {"kill": "kill -9", "stop": "SIGSTOP"}.get(self.kind, self.kind)
        what = {
            "before_init": lambda: f"{act} {self._who()} before hvd.init()",
            "first_round": lambda: f"{act} the first worker of slot {self.who[5:]} once "
                                   f"{self.point} in its first round",
            "later_round": lambda: f"{act} rank {self.rank} once {self.point} in the round "
                                   f"after a kill",
            "spare_wait": lambda: f"{act} a waiting spare",
            "promotion": lambda: f"{act} a waiting spare, promoted for a worker of its host "
                                 f"killed {self.delay:.2f} s before (stop: after)",
            "commit": lambda: f"{act} rank {self.rank} inside state.commit()",
            "sync": lambda: f"{act} rank {self.rank} inside the sync after a kill",
            "recovery": lambda: f"{act} a worker {self.delay:.2f} s into the recovery from "
                                f"a kill",
            "train": lambda: self._train(act),
        }[self.phase]()
        return f"{self.kind}/{self.phase}: {what}"

    def _who(self):
        return f"the first worker of slot {self.who[5:]} ({self.delay:.1f} s in)" \
            if self.who.startswith("slot:") else f"a new {self.who}"

    def _train(self, act):
        return {"kill": f"{act} a worker on {self.host}",
                "stop": f"{act} a worker on {self.host} for {self.hold:.1f} s",
                "double": f"kill -9 a worker on {self.host} and one on {self.host2} at once",
                "wipe": "kill -9 every worker at once (the spares and new workers start over)",
                "agent_restart": f"kill -9 {self.host}'s agent, a new one after {self.hold:.1f} s",
                "drop": f"DROP between {self.host} and hvdrun for {self.hold:.0f} s",
                "delay": f"delay {DELAY_MS}+0..{JITTER_MS} ms on {self.host} for "
                         f"{self.hold:.0f} s"}[self.kind]


# ---- the schedule ---------------------------------------------------------------

def _draw(rng, kind, phase, start_slots, reserved):
    """A Fault of (kind, phase) with its parameters drawn from rng; a start
    fault takes a slot from `start_slots` (free first-worker slots; a
    before_init one only when more than `reserved` are left)."""
    f = Fault(kind=kind, phase=phase, host=rng.choice(JOB_HOSTS), gap=rng.uniform(0.2, 0.8),
              pick=rng.randrange(SLOTS), pick2=rng.randrange(NP), rank=rng.randrange(MIN_NP),
              point=rng.choice(("joined", "connected")))
    if phase == "first_round":
        f.who = f"slot:{start_slots.pop(rng.randrange(len(start_slots)))}"
    elif phase == "before_init":
        whos = ["replacement", "spare"] + (["first"] if len(start_slots) > reserved else [])
        f.who = rng.choice(whos)
        if f.who == "first":
            f.who = f"slot:{start_slots.pop(rng.randrange(len(start_slots)))}"
            f.delay = rng.uniform(0.5, 3.0)   # the others are in their first Join by then
    elif phase == "recovery":
        f.delay = rng.uniform(0.0, 1.5)
    elif phase == "promotion":
        f.delay = rng.uniform(0.0, 0.1)
    if f.who.startswith("slot:"):
        f.host = JOB_HOSTS[int(f.who[5:]) // SLOTS]
    if kind == "stop" and phase == "train":
        f.hold = rng.uniform(1.0, HEARTBEAT_S + 2.0)   # a stall, or past the heartbeat timeout
    elif kind == "double":
        f.host2 = rng.choice(JOB_HOSTS)
    elif kind == "agent_restart":
        f.hold = rng.uniform(0.5, 3.0)
    elif kind == "drop":
        f.hold = DROP_S
    elif kind == "delay":
        f.hold = DELAY_S
    return f


def schedule(seed, count=None, combos=COMBOS):
    """Faults drawn by random.Random(seed): each combination of `combos` once,
    in a random order (first_round ones at the start), then `count` - len(combos)
    more drawn uniformly (count None: exactly the cover; a smaller count: the
    first `count` of the cover). The first-worker faults (first_round, a
    before_init of a first worker) come first, on distinct slots, at most
    START_LIMIT of them (a first_round fault beyond that becomes a later_round
    one)."""
    rng = random.Random(seed)
    order = list(combos)
    rng.shuffle(order)
    count = len(order) if count is None else count
    start_slots = list(range(NP))
    start_slots = [start_slots.pop(rng.randrange(len(start_slots))) for _ in range(START_LIMIT)]
    picks = order[:count]
    while len(picks) < count:
        picks.append(rng.choice(combos))
    plan = []
    for i, (kind, phase) in enumerate(picks):
        if phase == "first_round" and not start_slots:
            phase = "later_round"     # no first-worker slot left
        reserved = sum(1 for _, p in picks[i + 1:] if p == "first_round")
        plan.append(_draw(rng, kind, phase, start_slots, reserved))
    return sorted(plan, key=lambda f: not f.at_start)  # stable: start faults first


def covered(plan):
    """The (kind, phase) combinations a plan injects (a start fault counts once)."""
    return {(f.kind, f.phase) for f in plan}


def faults_from_env(default):
    """HVD_CHAOS_FAULTS (the number of faults) when set, else `default`."""
    value = os.environ.get(FAULTS_ENV)
    return int(value) if value else default
