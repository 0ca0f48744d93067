"""Real collectives through hvdrun: the worker programs and the examples."""
import pytest

from conftest import executable, run, worker_lines


@pytest.mark.parametrize("np", [1, 2, 3, 4])
def test_collectives_check(hvdrun, np):
    r = run([hvdrun, "-np", str(np), executable("collectives_check")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(np):
        assert f"collectives_check: rank {rank} of {np} OK" in lines.get(rank, []), r.stdout


def test_allreduce_demo_on_four_slots(hvdrun):
    r = run([hvdrun, "-np", "4", "-H", "localhost:4", executable("allreduce_demo")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert set(worker_lines(r.stdout)) <= {0, 1, 2, 3}


def test_train_linear_on_two_ranks(hvdrun):
    r = run([hvdrun, "-np", "2", executable("train_linear")], timeout=90)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
