"""Chaos for elastic jobs across the namespace hosts (tests/multihost): a seeded,
bounded random schedule of faults injected into a running elastic training
job, and the checks of what the job must still get right.

    plan = schedule(seed, count=5)                 # [Fault], same seed -> same plan
    run = ChaosRun(cluster, agents, secret, workdir, plan, seed=seed)
    outcome = run.run()                            # the job with the faults, then cleanup
    problems = check(outcome)                      # [] when every invariant held

Used by test_multihost_chaos.py (CI, about 5 faults) and bench/chaos_soak.py
(consecutive jobs for N minutes). The plan of faults is chaos_plan.py, the
analysis and the invariants chaos_check.py, the run (job, faults, cleanup) here.

The job: hvdrun -np 6 --min-np 4 --max-np 6 on h1:2, h2:2, h3:2 (a host
discovery script lists them), heartbeat timeout 3 s, blacklist cooldown 1-2 s,
every worker tests/integration/workers/elastic_train.py (prints "COMMIT step
size" for each step it completed, before committing it; the last step waits
until the job is back at full size).

The faults (KINDS), one at a time, each on one host:

  worker_kill    kill -9 of one worker: hvdrun starts a replacement in its slot
  worker_stop    SIGSTOP of one worker for 1-5 s, then SIGCONT. Well under the
                 heartbeat timeout (3 s) the job only stalls; from about 2.5 s
                 (heartbeats are periodic) hvdrun kills the worker and
                 replaces it: the draw decides which, both happen
  agent_restart  kill -9 of the host's hvd-agent, a new one 0.5-3 s later:
                 the survivors go on at 4, the host is blacklisted 1-2 s,
                 then the job grows back to 6
  drop           10 s of iptables DROP between the host and hvdrun (INPUT
                 from / OUTPUT to 10.77.0.1 in the host's namespace; the hosts
                 still reach each other): hvdrun loses the agent and the
                 ranks' heartbeats, the agent ends its workers; after the rules
                 go the host comes back and the job grows back
  delay          every packet leaving the host (eth0) held 40-60 ms for 8 s by
                 nfq_delayer (NFQUEUE; this kernel has no netem): the job
                 slows down, nothing fails. Skipped from the plan, with a
                 printed reason, when nfq_delayer is not built.

Bounds: a fixed number of faults; before each, the job must be back at full
size (6) and then a gap of 2-4 s must pass, so at most one host is ever down
and the job never goes below --min-np 4. A fault that cannot be injected
because the job is about to end is reported as skipped, not as a failure.

Times (CLOCK_MONOTONIC, seconds since the job started): each fault records
its start (injection) and end (the fault lifted: the kill itself, SIGCONT,
the new agent listening, the rules removed). Recovery time = from the end to
the first COMMIT at full size that hvdrun's output shows after it, of a step
at least 2 past the last step seen at the end (so that lines in flight
before the fault do not count); it is what a user watching hvdrun sees, so
it includes any delay in hvdrun's forwarding of the workers' output. A fault
"survived" when the job recovered within RECOVERY_TIMEOUT_S and the job
then ended well (check() found nothing).

Invariants (check()):
  a. hvdrun exits 0 (training completed);
  b. every rank prints the same final parameters, equal to a replay of the
     committed steps at the sizes they ran at (tests/integration/elastic_replay.py);
  c. the committed step count never goes back: a step that every rank of its
     world completed (a "complete" step: COMMIT lines from as many slots as
     the size) is never run again; a step run twice where the first run was
     not complete (a worker completed it, then died before the others did)
     is reported as "redone", not lost, and the replay uses its last size;
     every step 0..steps-1 is committed;
  d. no process outlives the job in any namespace but the agents (and
     nothing of the job in the root namespace), and no /dev/shm/hvd-* file
     that appeared during the job remains (hvd's named shm segments,
     transports/shm/rendezvous.cc).
Every failure message carries "replay with HVD_CHAOS_SEED=<seed>".
"""
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
from conftest import BUILD_DIR, PYTHON, Job, executable, stray_processes  # noqa: E402
from chaos_check import (Outcome, _alive, _job_processes, analyse, check,  # noqa: E402,F401
                         shm_files, summary)
from chaos_plan import (COMMIT, DELAY_MS, FAULTS_ENV, HEARTBEAT_S, JITTER_MS,  # noqa: E402,F401
                        JOB_HOSTS, KINDS, MIN_NP, NP, RECOVERY_TIMEOUT_S, SEED_ENV, SLOTS,
                        STEP_PAUSE_S, STEPS_USED, WORKER, Fault, delayer_path,
                        faults_from_env, replay_hint, schedule, seed_from_env,
                        unavailable_kinds)


def _load(name, path):
    """A module by path (tests/integration has a conftest.py of its own: not on sys.path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


elastic_replay = _load("elastic_replay", SOURCE / "tests" / "integration" / "elastic_replay.py")

# ---- processes, firewall --------------------------------------------------------

def _environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


def workers_on(cluster, host):
    """[(slot, pid)] of the training workers in the host's namespace, by slot."""
    found = []
    for pid in cluster.pids(host):
        if WORKER in cluster.describe([pid])[0]:
            env = _environ(pid)
            if "HVD_RANK" in env:
                found.append((int(env["HVD_RANK"]), pid))
    return sorted(found)


class Firewall:
    """iptables rules inserted in namespaces, each removed by remove()/clear()."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.rules = []     # (host, rule)

    def insert(self, host, rule):
        r = subprocess.run(self.cluster.exec_args(host, ["iptables", "-I", *rule]),
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError(f"iptables -I {' '.join(rule)} in {host.netns}: {r.stderr.strip()}")
        self.rules.append((host, rule))

    def remove(self, host, rule):
        subprocess.run(self.cluster.exec_args(host, ["iptables", "-D", *rule]),
                       capture_output=True, text=True, timeout=20)
        if (host, rule) in self.rules:
            self.rules.remove((host, rule))

    def clear(self):
        for host, rule in list(reversed(self.rules)):
            self.remove(host, rule)


class TimedJob(Job):
    """conftest.Job that also records when each stdout line arrived."""

    def __init__(self, cluster, args, env=None):
        self.arrivals = []      # (monotonic time, line) of stdout
        self.err_arrivals = []  # and of stderr
        super().__init__(cluster, args, env=env)

    def _read(self, stream, lines):
        timed = self.arrivals if lines is self.stdout else self.err_arrivals
        for line in stream:
            with self._lock:
                line = line.rstrip("\n")
                lines.append(line)
                timed.append((time.monotonic(), line))

    def commits_since(self, index):
        """[(t, slot, step, size)] of the COMMIT lines from arrival `index` on, and the next index."""
        with self._lock:
            new = self.arrivals[index:]
            end = len(self.arrivals)
        out = []
        for t, line in new:
            m = COMMIT.match(line)
            if m:
                out.append((t, int(m.group(1)), int(m.group(2)), int(m.group(3))))
        return out, end


class ChaosRun:
    """One elastic job on h1..h3 with the faults of `plan` injected in order.

    `agents` is conftest.Agents (its agents are killed and restarted here),
    `log` a print-like function for the progress lines."""

    def __init__(self, cluster, agents, secret, workdir, plan, seed, steps=None, log=print,
                 timeout=None):
        self.cluster = cluster
        self.agents = agents
        self.secret = secret
        self.workdir = pathlib.Path(workdir)
        self.plan = plan
        self.seed = seed
        self.log = log
        skip = unavailable_kinds()
        for fault in plan:
            if fault.kind in skip:
                fault.skipped = skip[fault.kind]
        live = [f for f in plan if not f.skipped]
        # Steps: enough for the faults and little more (the job cannot be told to
        # stop early). About 10 steps/s at full size on 2 cores: the steps
        # before the first fault, each fault's gap and what it took until the
        # job was back at full size (measured), a tail.
        self.steps = steps or int(20 + sum(10 * f.gap + STEPS_USED[f.kind](f) for f in live) + 50)
        self.timeout = timeout or 120 + sum(f.gap + f.hold + RECOVERY_TIMEOUT_S for f in live)
        self.firewall = Firewall(cluster)
        self.delayers = []
        self.job = None
        self.t0 = None

    # -- helpers --
    def _now(self):
        return time.monotonic() - self.t0

    def _say(self, text):
        self.log(f"chaos[{self.seed}] {self._now() if self.t0 else 0.0:6.1f}s {text}")

    def _job_args(self):
        script = self.workdir / "discover.sh"
        hosts = self.workdir / "hosts"
        hosts.write_text("".join(f"{h}:{SLOTS}\n" for h in JOB_HOSTS))
        script.write_text(f"#!/bin/sh\ncat {hosts}\n")
        script.chmod(0o755)
        return [executable("hvdrun"), "-np", NP, "--min-np", MIN_NP, "--max-np", NP,
                "--host-discovery-script", script, "--discovery-interval", "0.2",
                "--blacklist-cooldown-range", "1", "2", "--reset-limit", "1000",
                "--heartbeat-timeout-seconds", HEARTBEAT_S, "--secret-file", self.secret,
                "-x", f"PYTHONPATH={BUILD_DIR / 'python'}", "-x", "OMP_NUM_THREADS=1",
                "-x", f"ELASTIC_FULL_SIZE={NP}",
                PYTHON, WORKER, self.workdir / "marker", "-1", "0", self.steps, "kill",
                STEP_PAUSE_S]

    def _running(self):
        return self.job.proc.poll() is None

    def _wait_full(self, index, after, min_step, timeout):
        """Time (job clock) of the first full-size COMMIT of a step >= min_step that
        arrived at or after `after` (job clock), scanning from arrival `index`; None
        after `timeout` s or when the job ended. And whether a COMMIT below full size
        came before it."""
        deadline = time.monotonic() + timeout
        below = False
        while True:
            commits, index = self.job.commits_since(index)
            for t, _slot, step, size in commits:
                if size < NP:
                    below = True
                elif step >= min_step and t - self.t0 >= after:
                    return t - self.t0, below
            if time.monotonic() > deadline or not self._running():
                return None, below
            time.sleep(0.05)

    def _last_step(self):
        commits, end = self.job.commits_since(0)
        return max((c[2] for c in commits), default=-1), end

    # -- the faults --
    def _inject(self, fault):
        host = self.cluster.host(fault.host)
        if fault.kind in ("worker_kill", "worker_stop"):
            workers = workers_on(self.cluster, host)
            if not workers:
                fault.skipped = f"no worker on {host.name}"
                return
            slot, pid = workers[fault.pick % len(workers)]
            fault.target = f"slot {slot} pid {pid}"
            fault.start = self._now()
            if fault.kind == "worker_kill":
                os.kill(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(fault.hold)
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                fault.note = "replaced" if not _alive(pid) else "resumed"
            fault.end = self._now()
        elif fault.kind == "agent_restart":
            old = self.agents[host.name]
            fault.target = f"agent pid {old.pid}"
            fault.start = self._now()
            self.agents.kill(host)
            time.sleep(fault.hold)
            self.agents.start(host)
            fault.end = self._now()
        elif fault.kind == "drop":
            peer = self.cluster.bridge_address
            rules = [["INPUT", "-s", peer, "-j", "DROP"], ["OUTPUT", "-d", peer, "-j", "DROP"]]
            fault.target = f"{host.address} <-> {peer}"
            fault.start = self._now()
            try:
                for rule in rules:
                    self.firewall.insert(host, rule)
                time.sleep(fault.hold)
            finally:
                for rule in rules:
                    self.firewall.remove(host, rule)
            fault.end = self._now()
        elif fault.kind == "delay":
            self._delay(fault, host)

    def _delay(self, fault, host):
        queue = 40 + host.index
        proc = self.cluster.spawn(
            [delayer_path(), "--queue-num", queue, "--delay-ms", DELAY_MS, "--jitter-ms", JITTER_MS,
             "--seed", self.seed], host=host, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.delayers.append(proc)
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
                self.firewall.insert(host, rule)
            except RuntimeError as e:
                fault.skipped = f"no NFQUEUE target: {e}"
                return
            fault.start = self._now()
            time.sleep(fault.hold)
            self.firewall.remove(host, rule)
            fault.end = self._now()
        finally:
            self.firewall.remove(host, rule)
            self._stop_delayer(proc, fault)

    def _stop_delayer(self, proc, fault=None):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        try:
            tail = proc.stderr.read().strip().splitlines()
        except (OSError, ValueError):
            tail = []
        if fault is not None and tail:
            fault.note = tail[-1]
        self.cluster.forget(proc)
        if proc in self.delayers:
            self.delayers.remove(proc)

    # -- the whole run --
    def run(self):
        out = Outcome(seed=self.seed, steps=self.steps, faults=self.plan)
        shm_before = shm_files()
        self.agents.ensure(tls=False)
        self.t0 = time.monotonic()
        self._say(f"seed {self.seed}: {self.steps} steps, faults: "
                  + "; ".join(f.describe() + (f" (skipped: {f.skipped})" if f.skipped else "")
                              for f in self.plan))
        self.job = TimedJob(self.cluster, [str(a) for a in self._job_args()])
        try:
            self._drive(out)
            try:
                self.job.proc.wait(timeout=max(10, self.timeout - self._now()))
            except subprocess.TimeoutExpired:
                out.error = f"the job did not end within {self.timeout:.0f} s"
                self.job.kill()
            for r in self.job._readers:
                r.join(timeout=10)
        except BaseException as e:
            out.error = out.error or f"{type(e).__name__}: {e}"
            self.job.kill()
            if not isinstance(e, Exception):
                raise
        finally:
            self.firewall.clear()
            for proc in list(self.delayers):
                self._stop_delayer(proc)
            self.cluster.forget(self.job.proc)
            for host in self.cluster.hosts:  # a killed agent is started again
                agent = self.agents.by_name.get(host.name)
                if agent is None or not agent.alive():
                    self.agents.stop(host)
                    self.agents.start(host)
        out.duration = self._now()
        out.returncode = self.job.proc.returncode
        out.stdout = "\n".join(self.job.stdout) + "\n"
        # hvdrun's own lines (stderr) with their arrival time on the job's clock
        out.stderr = "".join(f"{t - self.t0:7.2f} {line}\n" for t, line in self.job.err_arrivals)
        self._say(f"hvdrun exited {out.returncode} after {out.duration:.1f} s")
        out.strays = stray_processes(self.cluster, self.agents, 10)
        out.root_strays = _job_processes(str(self.workdir), 5)
        time.sleep(0.5)
        out.shm_left = sorted(shm_files() - shm_before)
        out.analysis = analyse(out.stdout, self.steps)
        out.finals = elastic_replay.finals(out.stdout)
        if out.finals and not out.analysis.missing:
            want = elastic_replay.replay(out.analysis.sizes)
            out.replay_ok = all(elastic_replay.close_to(v, want) for v in out.finals.values())
        return out

    def _drive(self, out):
        self.job.wait_for(lambda lines: sum(1 for line in lines if COMMIT.match(line)
                                            and line.endswith(f" {NP}")) >= 5 * NP, timeout=120)
        for fault in self.plan:
            if fault.skipped:
                self._say(f"skipped {fault.describe()}: {fault.skipped}")
                continue
            time.sleep(fault.gap)
            last, index = self._last_step()
            if not self._running() or last > self.steps - 40:
                fault.skipped = f"the job is about to end (step {last} of {self.steps})"
                self._say(f"skipped {fault.describe()}: {fault.skipped}")
                continue
            self._say(f"inject {fault.describe()} at step {last}")
            first = last
            self._inject(fault)
            if fault.skipped:
                self._say(f"skipped: {fault.skipped}")
                continue
            last, _ = self._last_step()
            fault.full_at, fault.reset = self._wait_full(index, fault.end, last + 2,
                                                         RECOVERY_TIMEOUT_S)
            if fault.full_at is None:
                self._say(f"{fault.kind} on {fault.host} ({fault.target}): the job was not back "
                          f"at {NP} within {RECOVERY_TIMEOUT_S} s (running: {self._running()})")
                return
            fault.steps_used = self._last_step()[0] - first
            self._say(f"{fault.kind} on {fault.host} ({fault.target}) lifted at "
                      f"{fault.end:.1f}s; full size again after {fault.recovery:.1f} s"
                      f"{' (reset)' if fault.reset else ''}{' ' + fault.note if fault.note else ''}")



def _read_line(stream, timeout):
    """One line of `stream` within `timeout` s ('' at EOF or timeout)."""
    got = []
    t = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return got[0].strip() if got else ""
