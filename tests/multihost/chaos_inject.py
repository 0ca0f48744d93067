"""How each fault of the chaos model (chaos_plan.py) is put into a running job
(tests/multihost/chaos.py has the whole story). Injector(run).inject(fault)
fills in the fault's start, end, target and note, or its `skipped` reason.

Faults of a process are sent from here (kill -9, SIGSTOP) or armed inside the
workers (chaos_procs.Arms: elastic_train.py faults itself inside commit, sync,
before hvd.init(), or sets HVD_TEST_FAULT for its next Join). Some phases come
only with a reset; those faults kill a worker first (the trigger) and their
own fault lands in the recovery it causes. A hung process (SIGSTOP outside
the train phase) is never resumed: hvdrun must give it up."""
import re
import signal
import subprocess
import threading
import time

from chaos_plan import DELAY_MS, HEARTBEAT_S, JITTER_MS, delayer_path
from chaos_procs import alive, signal_pid

ARM_TIMEOUT_S = 30       # an armed fault fires within this after its trigger
SPARE_WAIT_S = 40        # longest wait for a waiting spare before a fault that needs one


class Injector:
    def __init__(self, run):
        self.run = run
        self.procs = run.procs
        self.count = 0

    # -- small helpers --
    def _now(self):
        return self.run.now()

    def _worker(self, pick, host=None, exclude=()):
        """(slot, pid, host) of a live worker (the pick-th of those left), or None."""
        left = [w for w in self.procs.workers(host) if w[1] not in exclude]
        return left[pick % len(left)] if left else None

    def _kill(self, who, what="worker"):
        if who is None:
            return f"no {what} to kill"
        slot, pid, host = who
        signal_pid(pid, signal.SIGKILL)
        return f"{what} {slot} pid {pid} on {host}"

    def _hang(self, who, what):
        """SIGSTOP, never resumed; the note says whether hvdrun gave it up in time."""
        slot, pid, host = who
        signal_pid(pid, signal.SIGSTOP)
        return f"{what} {slot} pid {pid} on {host} stopped"

    def _given_up(self, pid, since):
        """Waits (at most the heartbeat timeout + 6 s) for a hung process to go."""
        deadline = since + HEARTBEAT_S + 6
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        return "given up" if not alive(pid) else "still stopped"

    def _arm(self, fault, phase, who):
        self.count += 1
        name = f"f{self.count}"
        self.run.arms.arm(name, phase=phase, action=fault.kind, who=who, point=fault.point,
                          delay=f"{fault.delay:.3f}")
        return name

    def _fired(self, fault, name, timeout=ARM_TIMEOUT_S):
        """The armed fault's record once it fired (end = its time), else disarms it and
        marks the fault skipped."""
        got = self.run.arms.wait(name, timeout, self.run.running)
        if got is None and self.run.arms.cancel(name):
            fault.skipped = f"the armed {fault.phase} fault did not fire within {timeout} s"
            return None
        got = got or self.run.arms.wait(name, 5, lambda: True)
        if got is None:
            fault.skipped = "the armed fault was claimed but never fired"
            return None
        fault.end = float(got["t"]) - self.run.t0
        fault.target += (f"{'; ' if fault.target else ''}pid {got['pid']} (slot {got['slot']}, "
                         f"spare {got['spare']}, rank {got['rank']})")
        return got

    def _stderr_since(self, t, text, timeout):
        """(job time, line) of the first hvdrun stderr line at/after job time t that
        contains text; (None, None) when none came within `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            for when, line in self.run.stderr_arrivals():
                if when - self.run.t0 >= t and text in line:
                    return when - self.run.t0, line
            if time.monotonic() > deadline or not self.run.running():
                return None, None
            time.sleep(0.05)

    # -- dispatch --
    def inject(self, fault):
        getattr(self, f"_{fault.phase}")(fault)
        if fault.start is not None and fault.end is None and not fault.skipped:
            fault.end = self._now()

    def _train(self, fault):
        if fault.kind in ("agent_restart", "drop", "delay"):
            return getattr(self, f"_{fault.kind}")(fault)
        if fault.kind == "double":
            first = self._worker(fault.pick, fault.host)
            second = self._worker(fault.pick + 1 if fault.host2 == fault.host else fault.pick2,
                                  fault.host2, exclude=(first[1],) if first else ())
            if first is None or second is None:
                fault.skipped = f"no two workers on {fault.host} and {fault.host2}"
                return
            fault.start = self._now()
            fault.target = self._kill(first) + ", " + self._kill(second)
            return
        if fault.kind == "wipe":
            everyone = self.procs.workers()
            fault.start = self._now()
            fault.target = ", ".join(self._kill(w) for w in everyone)
            return
        victim = self._worker(fault.pick, fault.host)
        if victim is None:
            fault.skipped = f"no worker on {fault.host}"
            return
        fault.start = self._now()
        if fault.kind == "kill":
            fault.target = self._kill(victim)
            return
        fault.target = f"worker {victim[0]} pid {victim[1]}"
        signal_pid(victim[1], signal.SIGSTOP)
        time.sleep(fault.hold)
        signal_pid(victim[1], signal.SIGCONT)
        fault.end = self._now()
        fault.note = "replaced" if not alive(victim[1]) else "resumed"

    # -- phases --
    def _before_init(self, fault):
        """A replacement or a new spare faults itself before hvd.init(): armed, then a
        worker is killed where that process will start (a host without a spare for a
        replacement; with one for a spare: the refill after its promotion)."""
        spare_hosts = {h for _, _, h in self.procs.spares(waiting=False)}
        if fault.who == "spare" and not self.run.wait_spare():
            fault.skipped = f"no waiting spare within {SPARE_WAIT_S} s"
            return
        hosts = {h for _, _, h in self.procs.spares()} if fault.who == "spare" else \
            set(self.run.hosts) - spare_hosts
        candidates = [w for w in self.procs.workers() if w[2] in hosts]
        if not candidates:
            where = "with" if fault.who == "spare" else "without"
            fault.skipped = f"no worker on a host {where} a spare"
            return
        name = self._arm(fault, "init", fault.who)
        fault.start = self._now()
        fault.target = "trigger " + self._kill(candidates[fault.pick2 % len(candidates)])
        got = self._fired(fault, name)
        if got is not None and fault.kind == "stop":
            fault.note = self._given_up(int(got["pid"]), float(got["t"]))

    def _later_round(self, fault):
        """Rank R takes the fault at a commit, for its next Join (HVD_TEST_FAULT); then
        another worker is killed: the round after that kill is where it fires."""
        name = self._arm(fault, "round", f"rank:{fault.rank}")
        fault.start = self._now()
        got = self._fired(fault, name, timeout=10)
        if got is None:
            return
        victim = self._worker(fault.pick2, exclude=(int(got["pid"]),))
        trigger = self._now()
        fault.target = "trigger " + self._kill(victim) + "; " + fault.target
        fired, line = self._stderr_since(trigger, test_fault_line(fault), ARM_TIMEOUT_S)
        fault.end = fired if fired is not None else trigger
        fault.note = round_of(line)
        if fired is not None and fault.kind == "stop":
            fault.note += ", " + self._given_up(int(got["pid"]), fired + self.run.t0)

    def _spare_wait(self, fault):
        if not self.run.wait_spare():
            fault.skipped = f"no waiting spare within {SPARE_WAIT_S} s"
            return
        spares = self.procs.spares()
        spare = spares[fault.pick % len(spares)]
        fault.start = self._now()
        if fault.kind == "kill":
            fault.target = self._kill(spare, "spare")
        else:
            fault.target = self._hang(spare, "spare")
            fault.end = self._now()
            fault.note = self._given_up(spare[1], time.monotonic())

    def _promotion(self, fault):
        """A waiting spare and a worker of its host: SIGSTOP the spare, then kill the
        worker (it is promoted while stopped); or kill the worker, then the spare
        `delay` s later (as it is promoted)."""
        if not self.run.wait_spare():
            fault.skipped = f"no waiting spare within {SPARE_WAIT_S} s"
            return
        # A spare alone on its host (of those not promoted): the one hvdrun promotes.
        hosts = [h for _, _, h in self.procs.spares(waiting=False)]
        spares = [s for s in self.procs.spares() if hosts.count(s[2]) == 1] or \
            self.procs.spares()
        spare = spares[fault.pick % len(spares)]
        worker = self._worker(fault.pick2, spare[2])
        if worker is None:
            fault.skipped = f"no worker beside spare {spare[0]} on {spare[2]}"
            return
        fault.start = self._now()
        if fault.kind == "stop":
            fault.target = self._hang(spare, "spare")
            time.sleep(0.05)
            fault.target += ", " + self._kill(worker)
        else:
            fault.target = self._kill(worker)
            time.sleep(fault.delay)
            fault.target += ", " + self._kill(spare, "spare")
        fault.end = self._now()
        promoted, _ = self._stderr_since(fault.start, f"promoted spare {spare[0]} ", 2)
        fault.note = "promoted" if promoted is not None else "not promoted"
        if fault.kind == "stop":
            fault.note += ", " + self._given_up(spare[1], time.monotonic())

    def _commit(self, fault):
        name = self._arm(fault, "commit", f"rank:{fault.rank}")
        fault.start = self._now()
        got = self._fired(fault, name)
        if got is not None and fault.kind == "stop":
            fault.note = self._given_up(int(got["pid"]), float(got["t"]))

    def _sync(self, fault):
        name = self._arm(fault, "sync", f"rank:{fault.rank}")
        fault.start = self._now()
        fault.target = "trigger " + self._kill(self._worker(fault.pick2))
        got = self._fired(fault, name)
        if got is not None and fault.kind == "stop":
            fault.note = self._given_up(int(got["pid"]), float(got["t"]))

    def _recovery(self, fault):
        first = self._worker(fault.pick, fault.host)
        if first is None:
            fault.skipped = f"no worker on {fault.host}"
            return
        fault.start = self._now()
        fault.target = self._kill(first) + ", then "
        time.sleep(fault.delay)
        second = self._worker(fault.pick2, exclude=(first[1],))
        if second is None:
            fault.target += "no other worker"
            return
        if fault.kind == "kill":
            fault.target += self._kill(second)
            fault.end = self._now()
        else:
            fault.target += self._hang(second, "worker")
            fault.end = self._now()
            fault.note = self._given_up(second[1], time.monotonic())

    def _first_round(self, fault):
        raise AssertionError("first_round faults are armed at the start (ChaosRun.run)")

    # -- the host and network faults --
    def _agent_restart(self, fault):
        host = self.run.cluster.host(fault.host)
        old = self.run.agents[host.name]
        fault.target = f"agent pid {old.pid}"
        fault.start = self._now()
        self.run.agents.kill(host)
        time.sleep(fault.hold)
        self.run.agents.start(host)
        fault.end = self._now()

    def _drop(self, fault):
        host = self.run.cluster.host(fault.host)
        peer = self.run.cluster.bridge_address
        rules = [["INPUT", "-s", peer, "-j", "DROP"], ["OUTPUT", "-d", peer, "-j", "DROP"]]
        fault.target = f"{host.address} <-> {peer}"
        fault.start = self._now()
        try:
            for rule in rules:
                self.run.firewall.insert(host, rule)
            time.sleep(fault.hold)
        finally:
            for rule in rules:
                self.run.firewall.remove(host, rule)
        fault.end = self._now()

    def _delay(self, fault):
        host = self.run.cluster.host(fault.host)
        queue = 40 + host.index
        proc = self.run.cluster.spawn(
            [delayer_path(), "--queue-num", queue, "--delay-ms", DELAY_MS, "--jitter-ms",
             JITTER_MS, "--seed", self.run.seed], host=host, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.run.delayers.append(proc)
        rule = ["OUTPUT", "-o", "eth0", "-j", "NFQUEUE", "--queue-num", str(queue),
                "--queue-bypass"]
        try:
            ready = _read_line(proc.stdout, 10)
            if ready != f"nfq_delayer: ready queue {queue}":
                fault.skipped = (f"nfq_delayer did not start (exit {proc.poll()}): {ready!r} "
                                 f"{proc.stderr.read() if proc.poll() is not None else ''}")
                return
            fault.target = f"{host.address} eth0 out, queue {queue}"
            try:
                self.run.firewall.insert(host, rule)
            except RuntimeError as e:
                fault.skipped = f"no NFQUEUE target: {e}"
                return
            fault.start = self._now()
            time.sleep(fault.hold)
            self.run.firewall.remove(host, rule)
            fault.end = self._now()
        finally:
            self.run.firewall.remove(host, rule)
            self.run.stop_delayer(proc, fault)


def test_fault_line(fault):
    """What the runtime logs when the fault HVD_TEST_FAULT set fires."""
    return f"HVD_TEST_FAULT: {fault.kind} at '{fault.point}'"


def round_of(line):
    """'fired in round N' from a HVD_TEST_FAULT line (None: it never came)."""
    m = re.search(r"\(round (\d+), slot (\d+)\)", line or "")
    return f"fired in round {m.group(1)}" if m else "its HVD_TEST_FAULT line never came"


def _read_line(stream, timeout):
    """One line of `stream` within `timeout` s ('' at EOF or timeout)."""
    got = []
    t = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return got[0].strip() if got else ""
