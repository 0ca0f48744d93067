"""The engine through hvdrun with real processes: ops_check's every op and
dtype at several world sizes, a stalled tensor and a killed rank."""
import re

import pytest

from conftest import executable, run, worker_lines


@pytest.mark.parametrize("np", [2, 3, 4])
def test_ops_check(hvdrun, np):
    r = run([hvdrun, "-np", str(np), executable("ops_check")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(np):
        assert f"ops_check: rank {rank} of {np} OK" in lines.get(rank, []), r.stdout


def test_ops_check_with_tiny_cycles_no_fusion_no_cache(hvdrun):
    r = run([hvdrun, "-np", "2", "--cycle-time-ms", "0.1", "--fusion-threshold", "0",
             "--cache-capacity", "0", executable("ops_check")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(2):
        assert f"ops_check: rank {rank} of 2 OK" in lines.get(rank, []), r.stdout


def test_timeline_from_the_setting(hvdrun, tmp_path):
    path = tmp_path / "timeline.json"
    r = run([hvdrun, "-np", "2", "--timeline-filename", str(path), executable("ops_check")],
            timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    text = path.read_text()
    for phase in ("NEGOTIATE", "QUEUE", "ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER", "ALLGATHER",
                  "CYCLE", "ar.float32.sum"):
        assert phase in text, phase
    assert text.rstrip().endswith("]")
    # ops_check shuts down and initializes again: the second runtime's timeline
    # goes next to the first instead of over it.
    again = (tmp_path / "timeline.json.1").read_text()
    assert "ALLREDUCE" in again and "ar.float32.sum" not in again


def test_stalled_tensor_warns_then_fails(hvdrun):
    r = run([hvdrun, "-np", "3", "-x", "HVD_STALL_CHECK_TIME_SECONDS=2",
             "-x", "HVD_STALL_SHUTDOWN_TIME_SECONDS=4", executable("ops_check"), "--stall"],
            timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.duration < 20
    # Rank 0 warns, naming the tensor and the missing rank.
    output = r.stdout + r.stderr
    assert re.search(r"\[0\]<stderr>:.*One or more tensors were submitted by a subset of ranks",
                     output), output
    assert "[0]<stderr>:2: [stall.skipped]" in output, output
    assert re.search(r"\[0\]<stderr>:stall.skipped: waiting \d+ s for ranks \[2\]", output), output
    assert not re.search(r"\[[12]\]<stderr>:.*One or more tensors", output), output
    # ... and the op then fails on the ranks that submitted it.
    lines = worker_lines(r.stdout)
    for rank in (0, 1):
        assert any(l.startswith(f"ops_check: stall: rank {rank} failed as expected: "
                                "tensor 'stall.skipped' stalled: rank 2 did not submit it")
                   for l in lines.get(rank, [])), r.stdout


def test_killed_rank_fails_pending_ops(hvdrun):
    r = run([hvdrun, "-np", "3", "--terminate-grace", "20", executable("ops_check"),
             "--kill-rank", "1"], timeout=60)
    assert r.returncode == 137, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.duration < 15, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in (0, 2):
        assert any(l.startswith(f"ops_check: kill: rank {rank} pending ops failed")
                   for l in lines.get(rank, [])), f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
