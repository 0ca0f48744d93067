"""Worker liveness: every initialized worker sends hvdrun heartbeats; one
that stops answering (SIGSTOP) is named within the heartbeat timeout and the
job ends with exit code 125, instead of a peer's collective timing out 30 s
later and being blamed. Busy workers and workers after hvd.shutdown() are
never mistaken for dead ones."""
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
    assert ("hvdrun: error: rank 1 on host localhost stopped responding: no heartbeat for 5 s"
            in r.stderr), r.stderr
    assert "rank 0" not in r.stderr.split("stopped responding")[0], r.stderr
    # 5 s of silence, then termination (SIGTERM + SIGCONT): far below the
    # 30 s transport timeout that would otherwise end it.
    assert r.duration < 25, r.duration


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
