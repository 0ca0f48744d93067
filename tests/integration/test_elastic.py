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


def discovery_script(tmp_path, lines, name="discover.sh"):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in lines))
    path.chmod(0o700)
    return str(path)


def test_host_discovery_script_gives_the_hosts(hvdrun, tmp_path):
    script = discovery_script(tmp_path, ["# the cluster", "localhost:3"])
    r = run([hvdrun, "--host-discovery-script", script, "sh", "-c", "echo $HVD_RANK/$HVD_SIZE"],
            timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(l for l in r.stdout.splitlines() if "<stdout>" in l) == \
        [f"[{i}]<stdout>:{i}/3" for i in range(3)]
    capped = run([hvdrun, "--host-discovery-script", script, "--max-np", "2", "sh", "-c",
                  "echo $HVD_SIZE"], timeout=60)
    assert capped.returncode == 0 and capped.stdout.count(":2") == 2, capped.stdout


def test_bad_discovery_output_is_a_usage_error_naming_the_line(hvdrun, tmp_path):
    script = discovery_script(tmp_path, ["localhost:2", "localhost:oops"], "bad.sh")
    r = run([hvdrun, "--host-discovery-script", script, "true"], timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"--host-discovery-script {script}: line 2 'localhost:oops'" in r.stderr, r.stderr
