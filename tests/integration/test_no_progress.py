"""A job in which every rank waits for a tensor no other rank submits ends
by itself, with the default no-progress check (10 s): every rank fails with
an error naming the tensors and the ranks, and hvdrun ends the job with that
rank's exit code. Nothing hangs until a timeout outside the job."""
import os
import pathlib
import sys

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
PYTHON = sys.executable  # the Python ctest runs pytest with (HVD_PYTHON)

WORKER = """
import numpy as np
import hvd.numpy as hnp
hnp.init()
r = hnp.rank()
hnp.allreduce(np.ones(2), name="only_on_rank_%d" % r)
print("unreachable", flush=True)
"""


def test_wedged_job_ends_with_a_clear_error(hvdrun):
    env = {"PYTHONPATH": str(SOURCE / "python"),
           "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    r = run([hvdrun, "-np", "2", PYTHON, "-c", WORKER], timeout=90, env=env)
    output = r.stdout + r.stderr
    assert r.returncode == 1, output
    assert "unreachable" not in output
    assert "HorovodInternalError: no progress for 10 s on the global process set" in output, output
    assert "'only_on_rank_0' submitted by rank 0, not by rank 1" in output, output
    assert "'only_on_rank_1' submitted by rank 1, not by rank 0" in output, output
    assert "HVD_STALL_CHECK_NO_PROGRESS_SECONDS" in output
    # 10 s of no progress, plus start-up and shut-down: far from any outer timeout.
    assert r.duration < 45, r.duration


def test_no_progress_check_can_be_disabled(hvdrun):
    # With the check off (0), the same job only ends when the stall shutdown
    # (here 3 s) fails the stalled tensors: the setting is honoured.
    env = {"PYTHONPATH": str(SOURCE / "python"),
           "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    r = run([hvdrun, "-np", "2", "-x", "HVD_STALL_CHECK_NO_PROGRESS_SECONDS=0",
             "--stall-check-shutdown-time-seconds", "3", PYTHON, "-c", WORKER],
            timeout=90, env=env)
    output = r.stdout + r.stderr
    assert r.returncode == 1, output
    assert "no progress" not in output, output
    assert "stalled" in output and "HVD_STALL_SHUTDOWN_TIME_SECONDS" in output, output
