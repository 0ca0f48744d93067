"""Liveness before the round (docs/elastic.md): a process of an elastic job
that is not in a round yet — a hot spare, a promoted spare, a replacement —
and hangs (SIGSTOP) is seen by its agent (state T in /proc) and given up
after --heartbeat-timeout-seconds: killed, its slot to the next spare or a
fresh process. The job gets back to full size and finishes; before, the
survivors waited for it until their Join timed out and the job never ended
(issue 27, item 2)."""
import os
import signal
import subprocess
import sys
import time

from conftest import Background, pid_running, run
from elastic_replay import COMMIT, finals
from test_elastic import ENV, WORKER, check_run

# The repro: np 2, min 2, max 2, 3 s heartbeat timeout, 20 s elastic timeout.
FLAGS = ["-np", "2", "--min-np", "2", "--max-np", "2", "--heartbeat-timeout-seconds", "3"]
ELASTIC_TIMEOUT = ["--elastic-timeout", "20"]


def children_of(pid):
    """The pids of `pid`'s descendants, from /proc/*/stat."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rfind(")") + 2:].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    return dict(item.decode(errors="replace").split("=", 1)
                for item in raw.split(b"\0") if b"=" in item)


def find_process(root, wanted, timeout=60):
    """The descendant of `root` whose environment has every item of `wanted`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children_of(root):
            env = environ(pid)
            if all(env.get(k) == v for k, v in wanted.items()):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no process with {wanted} under {root} within {timeout} s")


def test_a_promoted_spare_that_hangs_is_given_up_and_the_job_finishes(hvdrun, tmp_path):
    # SIGSTOP the process that has HVD_SPARE, then kill -9 a worker: the
    # stopped spare is promoted, given up 3 s later, and the next spare
    # (started at the promotion) takes rank 0. Exit 0, back at 2 workers.
    spares_dir = tmp_path / "spares"
    spares_dir.mkdir()
    steps = 100  # a cap: the job ends 15 steps after it is back at full size
    end_file = tmp_path / "end"
    job = Background([hvdrun, *FLAGS, *ELASTIC_TIMEOUT, "--spares", "1", sys.executable, WORKER,
                      str(tmp_path / "no-victim"), "-1", "0", str(steps), "kill", "0.1"],
                     env={**ENV, "ELASTIC_FULL_SIZE": "2", "ELASTIC_SPARES_DIR": str(spares_dir),
                          "ELASTIC_END_FILE": str(end_file)})
    try:
        spare = find_process(job.proc.pid, {"HVD_SPARE": "2"})
        worker = find_process(job.proc.pid, {"HVD_RANK": "0"})
        assert "HVD_RANK" not in environ(spare)
        # Training runs, and the spare is past its imports (it writes its
        # pid just before hvd.init()): it waits in hvd.init() a moment later.
        job.wait_for(lambda lines: any("COMMIT" in line for line in lines), 120)
        deadline = time.monotonic() + 60
        while not (spares_dir / "spare.2").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        os.kill(spare, signal.SIGSTOP)
        os.kill(worker, signal.SIGKILL)
        stopped_at = time.monotonic()
        deadline = stopped_at + 120
        while (not any("back at full size" in line for line in job.stderr)
               and job.proc.poll() is None and time.monotonic() < deadline):
            time.sleep(0.1)
        printed = [int(m.group(1)) for m in COMMIT.finditer("\n".join(job.stdout))]
        steps = min(steps, max(printed, default=0) + 15)
        end_file.with_suffix(".tmp").write_text(str(steps))
        os.replace(end_file.with_suffix(".tmp"), end_file)
        code = job.wait(timeout=150)
    finally:
        job.close()
    r = subprocess.CompletedProcess(job.args, code, "\n".join(job.stdout) + "\n",
                                    "\n".join(job.stderr) + "\n")
    sizes = check_run(r, ranks=2, steps=steps)
    assert ("hvdrun: rank 0 on host localhost was killed by signal 9 (SIGKILL); promoted spare 2 "
            "on host localhost into rank 0") in r.stderr, r.stderr
    assert ("hvdrun: rank 0 on host localhost (promoted spare 2) has been stopped (state T in "
            "/proc) for 3 s (--heartbeat-timeout-seconds) before joining a round; giving it up: "
            "killing it to replace it") in r.stderr, r.stderr
    assert "promoted spare 3 on host localhost into rank 0" in r.stderr, r.stderr
    assert "hvdrun: the job is back at full size (2 workers)" in r.stderr, r.stderr
    assert sizes[steps - 1] == 2, sizes
    assert not pid_running(spare), "the hung spare outlived the job"
    # No round waited for it until the 20 s elastic timeout.
    assert "--elastic-timeout" not in r.stderr, r.stderr
    took = time.monotonic() - stopped_at
    assert took < 90, f"the job ended {took:.0f} s after the kill"


def replace_a_hanging_replacement(hvdrun, tmp_path, hang, flags=ELASTIC_TIMEOUT):
    # Rank 1 dies at step 3; its replacement hangs before hvd.init() (once),
    # the survivor waits for it in its Join (--min-np 2).
    marker = tmp_path / f"replacement-{hang.lower()}"
    r = run([hvdrun, *FLAGS, *flags, sys.executable, WORKER, str(tmp_path / "kill-1-3"), "1",
             "3", "40", "kill", "0.1"], timeout=150,
            env={**ENV, "ELASTIC_FULL_SIZE": "2", f"ELASTIC_REPLACEMENT_{hang}": str(marker)})
    check_run(r, ranks=2)
    assert marker.exists()
    assert ("hvdrun: rank 1 on host localhost was killed by signal 9 (SIGKILL); started a "
            "replacement (reset 1 of 10)") in r.stderr, r.stderr
    assert ("hvdrun: rank 1 on host localhost was killed by signal 9 (SIGKILL); started a "
            "replacement (reset 2 of 10)") in r.stderr, r.stderr
    assert sorted(finals(r.stdout)) == [0, 1]
    return r


def test_a_replacement_that_hangs_before_init_is_given_up_and_replaced(hvdrun, tmp_path):
    # Stopped (SIGSTOP): given up after the 3 s heartbeat timeout.
    r = replace_a_hanging_replacement(hvdrun, tmp_path, "STOP")
    assert ("hvdrun: rank 1 on host localhost (a replacement) has been stopped (state T in /proc) "
            "for 3 s (--heartbeat-timeout-seconds) before joining a round; giving it up: killing "
            "it to replace it") in r.stderr, r.stderr


def test_a_slow_replacement_is_given_up_only_at_the_start_timeout(hvdrun, tmp_path):
    # Alive but slow (asleep before hvd.init()): not dead, so not given up at
    # the heartbeat timeout; at --start-timeout (12 s) it is. The survivor's
    # Join waits for the next one (--elastic-timeout 40 s bounds the round).
    start = time.monotonic()
    r = replace_a_hanging_replacement(hvdrun, tmp_path, "SLEEP",
                                      ["--start-timeout", "12", "--elastic-timeout", "40"])
    assert ("hvdrun: rank 1 on host localhost (a replacement) has not reached hvd.init() within "
            "12 s (--start-timeout) of its start; giving it up: killing it to replace it") \
        in r.stderr, r.stderr
    assert "state T" not in r.stderr, r.stderr
    assert time.monotonic() - start > 12
