"""Worker liveness: every initialized worker sends hvdrun heartbeats; one
that stops answering (SIGSTOP) is named within the heartbeat timeout and the
job ends with exit code 125, instead of a peer's collective timing out 30 s
later and being blamed. Busy workers and workers after hvd.shutdown() are
never mistaken for dead ones, nor is a worker whose heartbeats are late while
its process runs (starved of CPU: HVD_TEST_FAULT heartbeat:pause=S pauses
its heartbeat thread alone) until the hung limit (launcher/liveness_rule.h)."""
import pathlib
import sys

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1"}

STOPS_ITSELF = """
import os, signal, time
import numpy as np
import hvd.numpy as hnp
hnp.init()
hnp.allreduce(np.ones(1), name="before")
if hnp.rank() == 1:
    os.kill(os.getpid(), signal.SIGSTOP)
for i in range(300):
    hnp.allreduce(np.ones(1), name="step%d" % i)
    time.sleep(0.1)
"""

BUSY_THEN_SHUTDOWN = """
import time
import numpy as np
import hvd.numpy as hnp
hnp.init()
if hnp.rank() == 1:
    end = time.time() + 4
    while time.time() < end:  # pure Python, holding the GIL
        pass
assert hnp.allreduce(np.ones(1), op=hnp.Sum)[0] == hnp.size()
hnp.shutdown()
time.sleep(3)  # no heartbeats after shutdown: not a stopped worker
print("done", flush=True)
"""


def test_stopped_worker_is_named_and_ends_the_job(hvdrun):
    r = run([hvdrun, "-np", "3", sys.executable, "-c", STOPS_ITSELF], timeout=90, env=ENV)
    assert r.returncode == 125, r.stdout + r.stderr
    assert ("hvdrun: error: rank 1 on host localhost stopped responding: no heartbeat for 5 s "
            "(its process is stopped, state T)" in r.stderr), r.stderr
    assert "rank 0" not in r.stderr.split("stopped responding")[0], r.stderr
    # 5 s of silence, then termination (SIGTERM + SIGCONT): far below the
    # 30 s transport timeout that would otherwise end it.
    assert r.duration < 25, r.duration


STEPS_FOR = """
import sys, time
import numpy as np
import hvd.numpy as hnp
hnp.init()
end = time.time() + float(sys.argv[1])
i = 0
while time.time() < end:
    hnp.allreduce(np.ones(1), name="step%d" % i)
    i += 1
    time.sleep(0.05)
hnp.allreduce(np.ones(1), name="last")
print("done", flush=True)
"""


def test_starved_but_running_worker_survives(hvdrun):
    # Rank 1's heartbeat thread pauses 5 s (2.5 heartbeat timeouts) while its
    # process runs: a warning naming it and how late, not a death verdict.
    r = run([hvdrun, "-np", "3", "--heartbeat-timeout-seconds", "2", "-x",
             "HVD_TEST_FAULT=heartbeat:pause=5:slot=1", sys.executable, "-c", STEPS_FOR, "8"],
            timeout=90, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("done") == 3, r.stdout
    assert "hvdrun: warning: rank 1 on host localhost: no heartbeat for " in r.stderr, r.stderr
    assert ("but its process runs (starved of CPU?); dead only at the hung limit of 20 s"
            in r.stderr), r.stderr
    assert "stopped responding" not in r.stderr, r.stderr


def test_running_worker_silent_past_the_hung_limit_is_named(hvdrun):
    # Heartbeats late for longer than --heartbeat-hung-multiple timeouts end
    # the job even though the process runs (a hung heartbeat, a livelock).
    r = run([hvdrun, "-np", "2", "--heartbeat-timeout-seconds", "1", "--heartbeat-hung-multiple",
             "3", "-x", "HVD_TEST_FAULT=heartbeat:pause=60:slot=0", sys.executable, "-c", STEPS_FOR,
             "60"], timeout=90, env=ENV)
    assert r.returncode == 125, r.stdout + r.stderr
    assert ("hvdrun: error: rank 0 on host localhost stopped responding: no heartbeat for 3 s "
            "(the hung limit") in r.stderr, r.stderr
    assert r.duration < 30, r.duration


def test_busy_and_finished_workers_are_alive(hvdrun):
    r = run([hvdrun, "-np", "2", "--heartbeat-timeout-seconds", "2", sys.executable, "-c",
             BUSY_THEN_SHUTDOWN], timeout=90, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("done") == 2, r.stdout
    assert "stopped responding" not in r.stderr


def test_liveness_can_be_turned_off(hvdrun):
    r = run([hvdrun, "-np", "2", "--heartbeat-timeout-seconds", "0", "--start-timeout", "5",
             "-x", "HVD_TRANSPORT_TIMEOUT_SECONDS=4", sys.executable, "-c", STOPS_ITSELF],
            timeout=90, env=ENV)
    # Without liveness the stopped rank is only noticed through a peer's
    # transport timeout (4 s here): that peer fails and is reported.
    assert r.returncode != 125, r.stderr
    assert "stopped responding" not in r.stderr
    assert "rank 0 on host localhost exited with code 1" in r.stderr, r.stderr


def test_starved_but_running_elastic_worker_is_kept(hvdrun, tmp_path):
    # The same rule in an elastic job: rank 1's heartbeats are 5 s late while
    # its process runs; it is warned of, not killed and replaced (the job
    # stays at 3 through every step).
    from test_elastic import check_run, train
    r = train(hvdrun, tmp_path, -1, 0, steps=80,
              env={"HVD_TEST_FAULT": "heartbeat:pause=5:slot=1"})
    sizes = check_run(r, steps=80)
    assert set(sizes.values()) == {3}, sizes
    assert "hvdrun: warning: rank 1 on host localhost: no heartbeat for " in r.stderr, r.stderr
    assert "stopped responding" not in r.stderr, r.stderr
