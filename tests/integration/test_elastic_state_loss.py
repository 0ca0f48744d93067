"""Lost state said aloud (docs/elastic.md, "Lost state"): when every worker
that held an elastic job's last commit dies (np 2 with two hot spares, both
workers killed at once), the spares start again from nothing; hvdrun says so
in one warning naming the commit lost and the commit the job starts again
from, and the job finishes. With --on-state-loss fail it ends instead, with
that error and exit code 1. One worker killed while the other survives
loses nothing and prints no such line. Each also beside two busy
processes."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import run
from elastic_replay import finals
from test_elastic import ENV, WORKER, check_run

STEPS, KILL_AT = 12, 5
# Both ranks die after step 5's update: commits 1-5 were made (steps 0-4).
LOST = f"commit {KILL_AT} (the last, held by ranks 0, 1) was lost with them"


def train(hvdrun, tmp_path, victims, spares, extra=()):
    spares_dir = tmp_path / "spares"
    spares_dir.mkdir()
    kills = ",".join(f"{rank}:{KILL_AT}" for rank in victims)
    return run([hvdrun, "-np", "2", "--min-np", "2", "--max-np", "2", "--spares", str(spares),
                "--heartbeat-timeout-seconds", "3", *extra, sys.executable, WORKER,
                str(tmp_path / "killed"), "-1", "0", str(STEPS), "kill", "0.05"], timeout=180,
               env={**ENV, "ELASTIC_FULL_SIZE": "2", "ELASTIC_KILLS": kills,
                    "ELASTIC_KILLS_WAIT": "1", "ELASTIC_SPARES_DIR": str(spares_dir),
                    "ELASTIC_SPARES_WAIT": str(spares)})


def steps_run(stdout, slot):
    """The steps the worker(s) of `slot` printed, in order."""
    return [int(line.split()[1]) for line in stdout.splitlines()
            if line.startswith(f"[{slot}]<stdout>:COMMIT ")]


@pytest.fixture(params=["idle", "loaded"])
def load(request):
    """Two busy processes beside the job in the "loaded" runs."""
    busy = []
    if request.param == "loaded":
        busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    yield request.param
    for proc in busy:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_every_holder_killed_at_once_is_said_and_the_job_restarts(hvdrun, tmp_path, load):
    r = train(hvdrun, tmp_path, (0, 1), spares=2)
    warning = f"hvdrun: warning: {LOST}; the job starts again from commit 0 (the start)\n"
    assert r.stderr.count(warning) == 1, r.stdout + r.stderr
    assert r.stderr.count("was lost") == 1, r.stderr
    # It did start again: step 0 ran twice; the end equals a replay of the
    # steps from the start.
    assert steps_run(r.stdout, 0)[:KILL_AT + 1] == [*range(KILL_AT), 0], r.stdout
    assert set(check_run(r, ranks=2, steps=STEPS).values()) == {2}


def test_on_state_loss_fail_ends_the_job(hvdrun, tmp_path, load):
    r = train(hvdrun, tmp_path, (0, 1), spares=2, extra=("--on-state-loss", "fail"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"hvdrun: error: {LOST}; ending the job (--on-state-loss fail)\n" in r.stderr, \
        r.stderr
    assert r.stderr.count("was lost") == 1, r.stderr
    assert not finals(r.stdout), r.stdout


def test_a_survivor_holding_the_last_commit_loses_nothing(hvdrun, tmp_path, load):
    r = train(hvdrun, tmp_path, (1,), spares=1)
    assert "was lost" not in r.stderr, r.stderr
    assert "promoted spare 2 on host localhost into rank 1" in r.stderr, r.stderr
    assert steps_run(r.stdout, 0) == list(range(STEPS)), r.stdout  # nothing ran twice
    check_run(r, ranks=2, steps=STEPS)


def test_a_bad_on_state_loss_is_a_usage_error(hvdrun):
    r = run([hvdrun, "-np", "2", "--min-np", "1", "--on-state-loss", "resume", "/bin/true"],
            timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr == "hvdrun: error: --on-state-loss: 'resume' is not restart or fail\n", \
        r.stderr
