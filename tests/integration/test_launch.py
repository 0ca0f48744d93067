"""hvdrun end to end with plain shell commands: ranks, environment, output."""
import os
import re
import signal
import stat

from conftest import Background, assert_all_gone, run, worker_lines


def test_rank_and_size(hvdrun):
    r = run([hvdrun, "-np", "2", "sh", "-c", "echo $HVD_RANK/$HVD_SIZE"], timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "[0]<stdout>:0/2" in lines
    assert "[1]<stdout>:1/2" in lines
    assert r.stderr == ""


def test_local_and_cross_ranks_on_two_local_hosts(hvdrun):
    r = run([hvdrun, "-np", "4", "-H", "localhost:2,127.0.0.1:2", "sh", "-c",
             "echo $HVD_LOCAL_RANK $HVD_LOCAL_SIZE $HVD_CROSS_RANK $HVD_CROSS_SIZE $HVD_HOSTNAME"],
            timeout=30)
    assert r.returncode == 0, r.stderr
    got = {rank: lines[0] for rank, lines in worker_lines(r.stdout).items()}
    assert got == {
        0: "0 2 0 2 localhost",
        1: "1 2 0 2 localhost",
        2: "0 2 1 2 127.0.0.1",
        3: "1 2 1 2 127.0.0.1",
    }


def test_hostfile_and_default_np(hvdrun, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two local hosts\nlocalhost slots=1\n\n127.0.0.1 slots=2\n")
    r = run([hvdrun, "--hostfile", str(hostfile), "sh", "-c", "echo $HVD_SIZE $HVD_CROSS_SIZE"],
            timeout=30)
    assert r.returncode == 0, r.stderr
    got = {rank: lines[0] for rank, lines in worker_lines(r.stdout).items()}
    assert got == {0: "3 2", 1: "3 2", 2: "3 1"}


def test_job_contract_and_working_directory(hvdrun, tmp_path):
    script = ('echo "$HVD_RENDEZVOUS_ADDR|$HVD_JOB_ID|$HVD_BIND_ADDRESS|${#HVD_JOB_TOKEN}|'
              '$HVD_START_TIMEOUT|$(pwd)"')
    r = run([hvdrun, "-np", "2", "sh", "-c", script], timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = worker_lines(r.stdout)
    for rank in (0, 1):
        addr, job_id, bind, token_len, start_timeout, cwd = lines[rank][0].split("|")
        assert re.fullmatch(r"127\.0\.0\.1:\d+", addr)
        assert job_id
        assert bind == "127.0.0.1"
        assert token_len == str(len("slot-0.") + 64)  # the worker's own credential
        assert start_timeout == "30"
        assert os.path.samefile(cwd, tmp_path)
    assert lines[0][0] == lines[1][0]  # one job, one rendezvous


def test_stderr_lines_go_to_stderr(hvdrun):
    r = run([hvdrun, "-np", "1", "sh", "-c", "echo out; echo oops >&2; printf 'no newline'"],
            timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[0]<stdout>:out", "[0]<stdout>:no newline"]
    assert r.stderr.splitlines() == ["[0]<stderr>:oops"]


def test_env_passing(hvdrun):
    r = run([hvdrun, "-np", "2", "-x", "FROM_HVDRUN", "-x", "SET_HERE=a=b", "--env", "EMPTY=",
             "sh", "-c", 'echo "$FROM_HVDRUN|$SET_HERE|${EMPTY-unset}"'],
            timeout=30, env={"FROM_HVDRUN": "copied value"})
    assert r.returncode == 0, r.stderr
    for rank, lines in worker_lines(r.stdout).items():
        assert lines == ["copied value|a=b|"], rank


def test_unset_env_name_is_a_warning(hvdrun):
    r = run([hvdrun, "-np", "1", "-x", "NOT_SET_ANYWHERE", "sh", "-c",
             "echo ${NOT_SET_ANYWHERE-unset}"], timeout=30)
    assert r.returncode == 0, r.stderr
    assert "[0]<stdout>:unset" in r.stdout.splitlines()
    assert "hvdrun: warning: -x NOT_SET_ANYWHERE" in r.stderr


def test_tunables_reach_the_workers(hvdrun, tmp_path):
    config = tmp_path / "hvd.yaml"
    config.write_text("start_timeout: 11\nterminate_grace: 2\n")
    show = 'echo "$HVD_START_TIMEOUT $HVD_TERMINATE_GRACE_SECONDS $HVD_LOG_LEVEL"'
    r = run([hvdrun, "-np", "1", "--config-file", str(config), "sh", "-c", show], timeout=30)
    assert worker_lines(r.stdout)[0] == ["11 2 warning"], r.stderr
    r = run([hvdrun, "-np", "1", "--config-file", str(config), "sh", "-c", show], timeout=30,
            env={"HOROVOD_START_TIMEOUT": "12"})
    assert worker_lines(r.stdout)[0] == ["12 2 warning"], r.stderr
    r = run([hvdrun, "-np", "1", "--config-file", str(config), "--start-timeout", "13",
             "--log-level", "error", "sh", "-c", show], timeout=30,
            env={"HVD_START_TIMEOUT": "12"})
    assert worker_lines(r.stdout)[0] == ["13 2 error"], r.stderr


def test_output_filename(hvdrun, tmp_path):
    logs = tmp_path / "logs"
    r = run([hvdrun, "-np", "2", "--output-filename", str(logs), "sh", "-c",
             "echo out$HVD_RANK; echo err$HVD_RANK >&2; echo more$HVD_RANK"], timeout=30)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert (logs / f"rank.{rank}" / "stdout").read_text() == f"out{rank}\nmore{rank}\n"
        assert (logs / f"rank.{rank}" / "stderr").read_text() == f"err{rank}\n"
    assert "[1]<stderr>:err1" in r.stderr.splitlines()


def test_version_and_help(hvdrun):
    r = run([hvdrun, "--version"], timeout=10)
    assert r.returncode == 0
    assert r.stdout.startswith("hvdrun (hvd) ")
    r = run([hvdrun, "--help"], timeout=10)
    assert r.returncode == 0
    for flag in ("-H", "--hostfile", "--start-timeout", "--output-filename", "--env",
                 "--config-file", "--log-level"):
        assert flag in r.stdout


def test_verbose_prints_the_plan_but_never_the_token(hvdrun, tmp_path):
    r = run([hvdrun, "--verbose", "--log-level", "trace", "-np", "2", "-H",
             "localhost:1,127.0.0.1:1", "sh", "-c",
             'printf %s "$HVD_JOB_TOKEN" > token.$HVD_RANK; echo done'], timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # Each worker has a credential of its own, not the job's token (issue 29).
    tokens = [(tmp_path / f"token.{rank}").read_text() for rank in (0, 1)]
    for rank, token in enumerate(tokens):
        assert re.fullmatch(rf"slot-{rank}\.[0-9a-f]{{64}}", token)
        assert token not in r.stdout and token not in r.stderr
        assert token[token.index("."):] not in r.stdout + r.stderr
    assert "HVD_JOB_TOKEN=***" in r.stderr
    assert "rank 0 on localhost: local_rank 0 of 1, cross_rank 0 of 2" in r.stderr
    assert "rank 1 on 127.0.0.1: local_rank 0 of 1, cross_rank 1 of 2" in r.stderr
    assert re.search(r"rendezvous at 127\.0\.0\.1:\d+", r.stderr)
    assert re.search(r"agent at 127\.0\.0\.1:\d+: host \S+, 2 slots", r.stderr)


def test_command_not_found(hvdrun):
    r = run([hvdrun, "-np", "2", "no-such-command-hvd-test", "--flag"], timeout=20)
    assert r.returncode == 127, r.stderr
    assert ("hvdrun: error: cannot execute 'no-such-command-hvd-test': command not found"
            in r.stderr.splitlines())
    assert r.stdout == ""
    assert r.duration < 5


def test_command_not_executable(hvdrun, tmp_path):
    script = tmp_path / "not_executable.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    r = run([hvdrun, "-np", "1", str(script)], timeout=20)
    assert r.returncode == 126, r.stderr
    assert (f"hvdrun: error: cannot execute '{script}': permission denied"
            in r.stderr.splitlines())


def test_programs_that_never_init_are_fine(hvdrun):
    r = run([hvdrun, "-np", "2", "--start-timeout", "1", "sleep", "2"], timeout=30)
    assert r.returncode == 0, r.stderr


def test_first_failure_decides_the_exit_code(hvdrun):
    r = run([hvdrun, "-np", "3", "sh", "-c",
             'if [ "$HVD_RANK" = 1 ]; then echo failing; exit 5; fi; exec sleep 30'], timeout=40)
    assert r.returncode == 5, r.stderr
    assert "hvdrun: error: rank 1 on host localhost exited with code 5" in r.stderr.splitlines()
    assert "[1]<stdout>:failing" in r.stdout.splitlines()
    assert r.duration < 15
    # The others were terminated by hvdrun: not reported as failures.
    assert "rank 0" not in r.stderr and "rank 2" not in r.stderr


def test_worker_killed_by_a_signal(hvdrun):
    r = run([hvdrun, "-np", "2", "sh", "-c",
             'if [ "$HVD_RANK" = 0 ]; then kill -9 $$; fi; exec sleep 30'], timeout=40)
    assert r.returncode == 137, r.stderr
    assert ("hvdrun: error: rank 0 on host localhost was killed by signal 9 (SIGKILL)"
            in r.stderr.splitlines())


def _interrupt(hvdrun, signo):
    job = Background([hvdrun, "-np", "2", "sh", "-c",
                      "echo pgid $(cut -d' ' -f5 /proc/$$/stat); exec sleep 60"])
    try:
        job.wait_for(lambda lines: sum("pgid" in l for l in lines) == 2, timeout=20)
        pgids = [int(l.split()[-1]) for l in job.stdout if "pgid" in l]
        os.kill(job.proc.pid, signo)
        code = job.wait(timeout=20)
        assert_all_gone(pgids=pgids)
        return code, job.stderr
    finally:
        job.close()


def test_sigint_terminates_the_workers(hvdrun):
    code, stderr = _interrupt(hvdrun, signal.SIGINT)
    assert code == 130
    assert "hvdrun: received SIGINT, terminating workers" in stderr


def test_sigterm_terminates_the_workers(hvdrun):
    code, stderr = _interrupt(hvdrun, signal.SIGTERM)
    assert code == 143
    assert "hvdrun: received SIGTERM, terminating workers" in stderr


HOROVOD_SCRIPT = ("import horovod.torch as hvd; hvd.init(); "
                  "print('horovod', hvd.rank(), hvd.size(), hvd.allreduce.__module__)")


def test_horovod_compat_runs_an_unchanged_horovod_script(hvdrun):
    from conftest import BUILD_DIR
    env = {"PYTHONPATH": str(BUILD_DIR / "python"), "OMP_NUM_THREADS": "1"}
    r = run([hvdrun, "-np", "2", "--horovod-compat", "/usr/bin/python3", "-c", HOROVOD_SCRIPT],
            timeout=120, env=env)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = r.stdout.splitlines()
    for rank in (0, 1):
        assert any(l.startswith(f"[{rank}]<stdout>:horovod {rank} 2 hvd.") for l in lines), r.stdout


def test_without_horovod_compat_no_horovod_is_shadowed(hvdrun):
    from conftest import BUILD_DIR
    env = {"PYTHONPATH": str(BUILD_DIR / "python")}
    r = run([hvdrun, "-np", "1", "/usr/bin/python3", "-c",
             "import importlib.util as u; s = u.find_spec('horovod'); "
             "print('origin', s.origin if s else None)"],
            timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    origin = [l for l in r.stdout.splitlines() if l.startswith("[0]<stdout>:origin ")]
    assert origin, r.stdout
    assert "compat" not in origin[0], origin  # a real Horovod, if any, stays visible
