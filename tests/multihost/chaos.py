"""Chaos for elastic jobs across the namespace hosts (tests/multihost): a seeded
schedule of faults in every phase of an elastic job's life, injected into a
running training job beside CPU load, and the checks of what the job must
still get right.

    plan = schedule(seed)                          # [Fault], same seed -> same plan
    run = ChaosRun(cluster, agents, secret, workdir, plan, seed=seed)
    outcome = run.run()                            # the job with the faults, then cleanup
    problems = check(outcome)                      # [] when every invariant held

Used by test_multihost_chaos.py (CI: the seeds CI_SEEDS, each one job with
every combination of CI_COMBOS once) and bench/chaos_soak.py (random jobs for N minutes). The
fault model and plans are chaos_plan.py, the injection of each fault
chaos_inject.py, the job's processes chaos_procs.py, the analysis and the
invariants chaos_check.py, the run here.

The job: hvdrun -np 6 --min-np 3 --max-np 6 --spares 2 on h1:2, h2:2, h3:2 (a
host discovery script lists them), heartbeat timeout 4 s, --elastic-timeout
40, blacklist cooldown 1-2 s, every worker tests/integration/workers/
elastic_train.py (prints "COMMIT step size" for each step it completed, before
committing it; the last step waits until the job is back at full size); two
busy processes (`while :; do :; done`) run beside it on the 2 cores. The job
ends a few steps after the last fault (ELASTIC_END_FILE).

The faults (chaos_plan.py): kill -9 or SIGSTOP (a hung process, never resumed
but in the train phase) of a process in each phase -- before hvd.init() (a
first worker while the others wait in the first round, a replacement, a
spare), right after its Join of the first round or of a later one (joined or
connected: HVD_TEST_FAULT), a spare waiting in hvd.init(), a spare being
promoted, inside state.commit(), inside the sync after a reset, a second
fault during the recovery from a kill, in the middle of training -- and two
workers killed at once, a host's agent killed and restarted, 10 s of
iptables DROP between a host and hvdrun, 8 s of 50 +- 10 ms delay on a
host's packets (nfq_delayer; left out, saying why, when it is not built).
The first-worker faults are armed before the job starts; each later one is
injected once the job is back at full size and a gap of 0.2-0.8 s has passed
(and, when it needs one, a spare waits).

Times (CLOCK_MONOTONIC, seconds since the job started): each fault records
its start (injection, or its trigger's kill) and end (the kill, the stop,
SIGCONT, the new agent listening, the rules removed; an armed fault: the
moment it fired). Recovery time = from the end to the first COMMIT at full
size that hvdrun's output shows after it, of a step at least 2 past the last
step seen at the end; it includes hvdrun's heartbeat verdict for a hung
process. A fault "survived" when the job recovered within RECOVERY_TIMEOUT_S
and the job then ended well (check() found nothing).

Invariants (check(), chaos_check.py):
  a. hvdrun exits 0 (training completed);
  b. every rank prints the same final parameters, equal to a replay of the
     committed steps at the sizes they ran at (tests/integration/elastic_replay.py);
  c. no committed step is lost: a step that every rank of its world completed
     is never run again, unless hvdrun printed `warning: commit N (...) was
     lost ...; the job starts again from commit M` and the step is in M..N
     (no holder of it survived); a step run twice where the first run was not
     complete is "redone", not lost; every step is committed;
  d. no process outlives the job in any namespace but the agents (a hung
     process included), nothing of the job in the root namespace, and no
     /dev/shm/hvd-* file that appeared during the job remains;
  e. progress: while the job runs, a commit follows the last within
     --elastic-timeout + the heartbeat timeout (44 s), or hvdrun ends naming
     the cause (an `hvdrun: error:` line); the run stops a job that stalls
     that long (and records the processes' states);
  f. after each fault the job is back at full size within RECOVERY_TIMEOUT_S,
     and every fault of the plan was injected;
  g. no false deaths under load: hvdrun gives up at most one process as hung
     (no heartbeat, or stopped in /proc) per process stopped, and none as slow
     to start.
Every failure message carries "replay with HVD_CHAOS_SEED=<seed>".
"""
import os
import pathlib
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
from conftest import BUILD_DIR, PYTHON, Job, executable, stray_processes  # noqa: E402
from chaos_check import Outcome, analyse, job_processes, shm_files, state_losses  # noqa: E402
from chaos_inject import SPARE_WAIT_S, Injector, round_of, test_fault_line  # noqa: E402
from chaos_plan import (COMMIT, ELASTIC_TIMEOUT_S, FAULT_SECONDS, HEARTBEAT_S,  # noqa: E402
                        JOB_HOSTS, LOAD_PROCS, MIN_NP, NP, PROGRESS_BOUND_S, RECOVERY_TIMEOUT_S,
                        SLOTS, SPARES, STEP_CAP, STEP_PAUSE_S, WORKER, replay_hint,
                        unavailable_kinds)
# What the test and the soak use, from one module:
from chaos_check import attribute_losses, check, no_progress, summary  # noqa: E402,F401
from chaos_plan import (CI_COMBOS, CI_SEEDS, COMBOS, LOAD_ENV, Fault,  # noqa: E402,F401
                        combos_from_env, covered, faults_from_env, schedule, seed_from_env)
from chaos_procs import Arms, Firewall, JobProcesses, Load, signal_pid  # noqa: E402

START_TIMEOUT_S = 150    # the job at full size after its start and its first-worker faults
END_STEPS = 8            # steps the job runs after the last fault


def _load(name, path):
    """A module by path (tests/integration has a conftest.py of its own: not on sys.path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


elastic_replay = _load("elastic_replay", SOURCE / "tests" / "integration" / "elastic_replay.py")


class TimedJob(Job):
    """conftest.Job that also records when each line arrived."""

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
        """[(t, slot, step, size)] of the COMMIT lines from arrival `index` on, and the
        next index."""
        with self._lock:
            new = self.arrivals[index:]
            end = len(self.arrivals)
        out = []
        for t, line in new:
            m = COMMIT.match(line)
            if m:
                out.append((t, int(m.group(1)), int(m.group(2)), int(m.group(3))))
        return out, end


class Stalled(Exception):
    """The job made no progress for PROGRESS_BOUND_S and did not end."""


class ChaosRun:
    """One elastic job on h1..h3 with the faults of `plan` injected in order.

    `agents` is conftest.Agents (its agents are killed and restarted here),
    `log` a print-like function for the progress lines, `load` the number of
    busy processes beside the job."""

    def __init__(self, cluster, agents, secret, workdir, plan, seed, log=print, timeout=None,
                 load=LOAD_PROCS, hint=None):
        self.cluster = cluster
        self.agents = agents
        self.secret = secret
        self.workdir = pathlib.Path(workdir)
        self.plan = plan
        self.seed = seed
        self.log = log
        self.load = load
        self.hint = hint or replay_hint(seed, load=load)
        self.hosts = JOB_HOSTS
        skip = unavailable_kinds()
        for fault in plan:
            if fault.kind in skip:
                fault.skipped = skip[fault.kind]
        live = [f for f in plan if not f.skipped]
        self.timeout = timeout or START_TIMEOUT_S + 30 + sum(
            f.gap + FAULT_SECONDS.get(f.kind, 2 * HEARTBEAT_S + 4) for f in live)
        self.firewall = Firewall(cluster)
        self.arms = Arms(self.workdir / "faults")
        self.spares_dir = self.workdir / "spares"
        self.end_file = self.workdir / "end"
        self.delayers = []
        self.job = None
        self.t0 = None
        self.procs = None
        self.steps = None

    # -- what the injector uses --
    def now(self):
        return time.monotonic() - self.t0

    def running(self):
        return self.job.proc.poll() is None

    def stderr_arrivals(self):
        with self.job._lock:
            return list(self.job.err_arrivals)

    def wait_spare(self):
        deadline = time.monotonic() + SPARE_WAIT_S
        while not self.procs.spares():
            if time.monotonic() > deadline or not self.running():
                return False
            self._progress()
            time.sleep(0.1)
        return True

    def _say(self, text):
        self.log(f"chaos[{self.seed}] {self.now() if self.t0 else 0.0:6.1f}s {text}")

    def _job_args(self):
        script = self.workdir / "discover.sh"
        hosts = self.workdir / "hosts"
        hosts.write_text("".join(f"{h}:{SLOTS}\n" for h in JOB_HOSTS))
        script.write_text(f"#!/bin/sh\ncat {hosts}\n")
        script.chmod(0o755)
        self.spares_dir.mkdir(exist_ok=True)
        env = {"PYTHONPATH": BUILD_DIR / "python", "OMP_NUM_THREADS": 1, "ELASTIC_FULL_SIZE": NP,
               "ELASTIC_SPARES_DIR": self.spares_dir, "ELASTIC_FAULT_DIR": self.arms.dir,
               "ELASTIC_END_FILE": self.end_file}
        return [executable("hvdrun"), "-np", NP, "--min-np", MIN_NP, "--max-np", NP,
                "--spares", SPARES, "--host-discovery-script", script,
                "--discovery-interval", "0.2", "--blacklist-cooldown-range", "1", "2",
                "--reset-limit", "1000", "--heartbeat-timeout-seconds", HEARTBEAT_S,
                "--elastic-timeout", ELASTIC_TIMEOUT_S, "--secret-file", self.secret,
                *[a for k, v in env.items() for a in ("-x", f"{k}={v}")],
                PYTHON, WORKER, self.workdir / "marker", "-1", "0", STEP_CAP, "kill",
                STEP_PAUSE_S]

    # -- waiting --
    def _progress(self):
        """Raises Stalled when no COMMIT arrived for PROGRESS_BOUND_S (+ 5 s of slack
        for output in flight) while the job runs (from its start: + START_TIMEOUT_S)."""
        with self.job._lock:
            last = next((t for t, line in reversed(self.job.arrivals) if COMMIT.match(line)), None)
        since = time.monotonic() - (last if last is not None else self.t0 + START_TIMEOUT_S)
        if since > PROGRESS_BOUND_S + 5 and self.running():
            raise Stalled(f"no commit for {since:.0f} s (--elastic-timeout {ELASTIC_TIMEOUT_S} + "
                          f"heartbeat {HEARTBEAT_S} s) and hvdrun did not end")

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
            if time.monotonic() > deadline or not self.running():
                return None, below
            self._progress()
            time.sleep(0.05)

    def _last_step(self):
        """The step the job is at (the highest of the last COMMIT lines: after a lost
        state it starts over) and the arrival index after them."""
        commits, end = self.job.commits_since(0)
        return max((c[2] for c in commits[-2 * NP:]), default=-1), end

    def stop_delayer(self, proc, fault=None):
        if proc.poll() is None:
            proc.terminate()
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
        out = Outcome(seed=self.seed, steps=0, faults=self.plan, load=self.load, hint=self.hint)
        shm_before = shm_files()
        self.agents.ensure(tls=False)
        start_arms = self._arm_start()
        load = Load(self.load)
        self.t0 = time.monotonic()
        self._say(f"seed {self.seed}: {len(self.plan)} faults, {self.load} busy processes beside "
                  "the job: " + "; ".join(f.describe() + (f" (skipped: {f.skipped})"
                                                          if f.skipped else "")
                                          for f in self.plan))
        self.job = TimedJob(self.cluster, [str(a) for a in self._job_args()])
        self.procs = JobProcesses(self.cluster, JOB_HOSTS, self.spares_dir,
                                  lambda: [line for _, line in self.stderr_arrivals()])
        try:
            self._start(start_arms)
            self._drive()
            self._end()
        except Stalled as e:
            out.stalled = f"{e} (at {self.now():.1f} s)"
            out.snapshot = self.procs.snapshot()
            self._say(f"stalled: {e}; processes: {out.snapshot}")
            self.job.kill()
        except BaseException as e:
            out.error = out.error or f"{type(e).__name__}: {e}"
            self.job.kill()
            if not isinstance(e, Exception):
                raise
        finally:
            load.stop()
            self.firewall.clear()
            for proc in list(self.delayers):
                self.stop_delayer(proc)
            self.cluster.forget(self.job.proc)
            for host in self.cluster.hosts:  # a killed agent is started again
                agent = self.agents.by_name.get(host.name)
                if agent is None or not agent.alive():
                    self.agents.stop(host)
                    self.agents.start(host)
        for r in self.job._readers:
            r.join(timeout=10)
        out.duration = self.now()
        out.returncode = self.job.proc.returncode
        out.stdout = "\n".join(self.job.stdout) + "\n"
        out.arrivals = [(t - self.t0, line) for t, line in self.job.arrivals]
        out.stderr = "".join(f"{t - self.t0:7.2f} {line}\n" for t, line in self.job.err_arrivals)
        self._say(f"hvdrun exited {out.returncode} after {out.duration:.1f} s")
        (self.workdir / "hvdrun.stdout").write_text(   # kept for a look afterwards
            "".join(f"{t:7.2f} {line}\n" for t, line in out.arrivals))
        (self.workdir / "hvdrun.stderr").write_text(out.stderr)
        out.strays = stray_processes(self.cluster, self.agents, 10)
        out.root_strays = job_processes(str(self.workdir), 5)
        # What outlived the job (a hung process hvdrun never ended): reported, then ended
        # so that the next job starts clean.
        for line in [x for lines in out.strays.values() for x in lines] + out.root_strays:
            signal_pid(int(line.split()[0]), signal.SIGKILL)
        time.sleep(0.5)
        out.shm_left = sorted(shm_files() - shm_before)
        out.steps = self.steps if self.steps is not None else self._last_step()[0] + 1
        out.analysis = analyse(out.arrivals, out.steps)
        out.losses = state_losses(out.stderr)
        out.finals = elastic_replay.finals(out.stdout)
        if out.finals and not out.analysis.missing:
            # The run the parameters come from: steps 0..steps-1 (after a lost state the
            # job started over; steps beyond its end ran before that only).
            want = elastic_replay.replay([out.analysis.sizes[s] for s in range(out.steps)])
            out.replay_ok = all(elastic_replay.close_to(v, want) for v in out.finals.values())
        return out

    def _arm_start(self):
        """The first-worker faults, armed before the job starts: {fault: arm name}."""
        names = {}
        for i, f in enumerate(f for f in self.plan if f.at_start and not f.skipped):
            name = f"start{i}"
            phase = "round" if f.phase == "first_round" else "init"
            self.arms.arm(name, phase=phase, action=f.kind, who=f.who, point=f.point,
                          delay=f"{f.delay:.3f}")
            names[id(f)] = (f, name)
        return list(names.values())

    def _start(self, start_arms):
        """Waits for the job at full size after its start; the first-worker faults'
        times (a first_round one: its HVD_TEST_FAULT line)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        index = 0
        while True:
            self._progress()
            commits, index = self.job.commits_since(index)
            if any(size == NP and step >= 2 for _, _, step, size in commits) and \
                    all(self.arms.fired(name) for _, name in start_arms):
                break
            if time.monotonic() > deadline or not self.running():
                raise AssertionError(f"the job did not reach {NP} workers and step 2 within "
                                     f"{START_TIMEOUT_S} s (running: {self.running()})")
            time.sleep(0.1)
        for f, name in start_arms:
            got = self.arms.fired(name)
            f.start = f.end = float(got["t"]) - self.t0
            f.target = f"slot {got['slot']} pid {got['pid']}"
            if f.phase == "first_round":
                when, line = next(((t - self.t0, line) for t, line in self.stderr_arrivals()
                                   if test_fault_line(f) in line
                                   and f"slot {f.who[5:]})" in line), (None, None))
                f.end = when if when is not None else f.end
                f.note = round_of(line)
            f.full_at = next((t for t, line in
                              ((t - self.t0, line) for t, line in self.job.arrivals)
                              if t >= f.end and (m := COMMIT.match(line))
                              and int(m.group(3)) == NP), None)
            self._say(f"{f.describe()} [{f.target}] fired at {f.end:.1f}s; full size "
                      f"at {f.full_at if f.full_at is None else round(f.full_at, 1)}s")

    def _drive(self):
        injector = Injector(self)
        for fault in (f for f in self.plan if not f.at_start):
            if fault.skipped:
                self._say(f"skipped {fault.describe()}: {fault.skipped}")
                continue
            time.sleep(fault.gap)
            last, index = self._last_step()
            self._say(f"inject {fault.describe()} at step {last}")
            first = last
            injector.inject(fault)
            if fault.skipped:
                self._say(f"skipped: {fault.skipped}")
                continue
            last, _ = self._last_step()
            after = fault.end
            if fault.kind == "wipe":   # the job starts over: from step 0, once no line is in flight
                last, after = -2, fault.end + 1.0
            fault.full_at, fault.reset = self._wait_full(index, after, last + 2,
                                                         RECOVERY_TIMEOUT_S)
            if fault.full_at is None:
                self._say(f"{fault.describe()} ({fault.target}): the job was not back "
                          f"at {NP} within {RECOVERY_TIMEOUT_S} s (running: {self.running()})")
                return
            fault.steps_used = self._last_step()[0] - first
            note = (" (reset)" if fault.reset else "") + (" " + fault.note if fault.note else "")
            self._say(f"{fault.kind}/{fault.phase} ({fault.target}) ended at {fault.end:.1f}s; "
                      f"full size again after {fault.recovery:.1f} s{note}")

    def _end(self):
        """Tells the workers where to end (ELASTIC_END_FILE) and waits for hvdrun."""
        if self.running():
            self.steps = self._last_step()[0] + END_STEPS
            tmp = self.end_file.with_suffix(".tmp")
            tmp.write_text(str(self.steps))
            os.replace(tmp, self.end_file)
        deadline = self.t0 + self.timeout
        while self.running():
            if time.monotonic() > deadline:
                raise AssertionError(f"the job did not end within {self.timeout:.0f} s")
            self._progress()
            time.sleep(0.1)
