"""Elastic jobs (docs/elastic.md): hvdrun --min-np/--max-np replaces a worker
killed with SIGKILL on its host; the survivors recover in place through
hvd.elastic.run; training completes with parameters identical on every rank
and equal to those of a run without the failure. Bad elastic flags are
usage errors; the reset limit ends a job that keeps failing."""
import pathlib
import re
import sys

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
FINAL = re.compile(r"^\[(\d+)\]<stdout>:final (\d+) (.*)$", re.M)


def finals(stdout):
    return {int(m.group(2)): m.group(3) for m in FINAL.finditer(stdout)}


def train(hvdrun, tmp_path, victim, kill_at, extra=(), how="kill"):
    marker = tmp_path / f"{how}-{victim}-{kill_at}"
    return run([hvdrun, "-np", "3", "--min-np", "2", "--max-np", "3", *extra, sys.executable,
                WORKER, str(marker), str(victim), str(kill_at), "8", how], timeout=240, env=ENV)


def test_killed_worker_is_replaced_and_training_matches(hvdrun, tmp_path):
    reference = train(hvdrun, tmp_path, -1, 0)
    assert reference.returncode == 0, reference.stdout + reference.stderr
    want = finals(reference.stdout)
    assert sorted(want) == [0, 1, 2] and len(set(want.values())) == 1, reference.stdout

    for victim in (1, 0):  # rank 0 too: the state comes from a survivor, not the replacement
        r = train(hvdrun, tmp_path, victim, 3)
        assert r.returncode == 0, r.stdout + r.stderr
        assert (f"hvdrun: rank {victim} on host localhost was killed by signal 9 (SIGKILL); "
                "started a replacement (reset 1 of 10)") in r.stderr, r.stderr
        got = finals(r.stdout)
        assert got == want, f"victim {victim}:\n{r.stdout}\n{r.stderr}"


def test_stopped_worker_is_killed_and_replaced(hvdrun, tmp_path):
    # SIGSTOP: the worker's heartbeats stop; in an elastic job hvdrun kills
    # it and replaces it instead of ending the job.
    reference = train(hvdrun, tmp_path, -1, 0)
    r = train(hvdrun, tmp_path, 2, 4, extra=("--heartbeat-timeout-seconds", "2"), how="stop")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("hvdrun: rank 2 on host localhost stopped responding: no heartbeat for 2 s; "
            "killing it to replace it") in r.stderr, r.stderr
    assert "rank 2 on host localhost was killed by signal 9 (SIGKILL); started a replacement" \
        in r.stderr, r.stderr
    assert finals(r.stdout) == finals(reference.stdout), r.stdout + r.stderr


def test_reset_limit_ends_a_job_that_keeps_failing(hvdrun, tmp_path):
    r = run([hvdrun, "-np", "2", "--min-np", "1", "--reset-limit", "2", "sh", "-c",
             'if [ "$HVD_RANK" = 1 ]; then exit 7; fi; sleep 30'], timeout=60, env=ENV)
    assert r.returncode == 7, r.stderr
    assert r.stderr.count("started a replacement") == 2, r.stderr
    assert ("rank 1 on host localhost exited with code 7; the reset limit (2, --reset-limit) "
            "is used up") in r.stderr, r.stderr


def test_bad_elastic_flags_are_usage_errors(hvdrun):
    for args, message in ((["--min-np", "4"], "--min-np 4 is more than -np 2"),
                          (["--max-np", "1"], "--max-np 1 is less than -np 2"),
                          (["--min-np", "0"], "--min-np 0: need at least 1 process"),
                          (["--reset-limit", "3"], "--reset-limit needs an elastic job")):
        r = run([hvdrun, "-np", "2", *args, "true"], timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
