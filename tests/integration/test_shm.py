"""The shared-memory transport under hvdrun (HVD_CPU_TRANSPORT=shm; the ranks
of one host exchange data through one /dev/shm segment per world): every op
in every dtype at 1 to 8 ranks (ops_check), and no /dev/shm segment outlives
its job, whether it ends normally, a rank dies, or hvdrun itself is killed
with SIGKILL."""
import os
import pathlib
import signal
import time

import pytest

from conftest import BUILD_DIR, Background, assert_all_gone, executable, run, worker_lines

SOURCE = pathlib.Path(__file__).resolve().parents[2]
SHM = {"HVD_CPU_TRANSPORT": "shm"}


def segments():
    return {p.name for p in pathlib.Path("/dev/shm").glob("hvd-*")}


def assert_no_new_segments(before, timeout=5.0):
    """Segments created since `before` (by this job) are gone; other tests
    running beside this one may create short-lived ones, so each new name
    is given `timeout` s to disappear."""
    deadline = time.monotonic() + timeout
    while True:
        left = segments() - before
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not left, f"/dev/shm segments outlived the job: {sorted(left)}"


@pytest.mark.parametrize("np", [1, 2, 3, 4, 8])
def test_ops_check_on_shm(hvdrun, np):
    before = segments()
    r = run([hvdrun, "-np", str(np), executable("ops_check")], timeout=180, env=SHM)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(np):
        assert f"ops_check: rank {rank} of {np} OK" in lines.get(rank, []), r.stdout
    assert_no_new_segments(before)


def test_no_segment_left_when_a_rank_dies(hvdrun):
    before = segments()
    r = run([hvdrun, "-np", "3", executable("ops_check"), "--kill-rank", "1"], timeout=120,
            env=SHM)
    assert r.returncode != 0, r.stderr
    assert "rank 1 on host localhost was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert_no_new_segments(before)


def test_no_segment_left_after_sigkill_of_hvdrun(hvdrun):
    # hvdrun dies at once; its workers die with it (PR_SET_PDEATHSIG): the
    # segment was unlinked as soon as every rank had attached.
    before = segments()
    script = ("import time, numpy as np, hvd.numpy as hnp\n"
              "hnp.init()\n"
              "for i in range(100000):\n"
              "    hnp.allreduce(np.ones(1000), name='loop')\n"
              "    if i == 10: print('looping', flush=True)\n"
              "    time.sleep(0.01)\n")
    env = {**SHM, "PYTHONPATH": str(SOURCE / "python"),
           "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so")}
    job = Background([hvdrun, "-np", "2", "/usr/bin/python3", "-c", script], env=env)
    try:
        job.wait_for(lambda lines: sum("looping" in l for l in lines) == 2, timeout=60)
        os.kill(job.proc.pid, signal.SIGKILL)
        job.wait(timeout=10)
        assert_all_gone(pgids=[job.proc.pid], timeout=10)
    finally:
        job.close()
    assert_no_new_segments(before)
