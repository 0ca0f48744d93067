"""Elastic jobs (docs/elastic.md): hvdrun --min-np/--max-np replaces a worker
killed with SIGKILL on its host; the survivors recover in place through
hvd.elastic.run, going on at the smaller size while the replacement starts,
and grow back when it joins; training completes with parameters identical on
every rank and equal to a replay of the committed steps at the sizes they
ran at. Bad elastic flags are
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
COMMIT = re.compile(r"<stdout>:COMMIT (\d+) (\d+)$", re.M)
STEPS = 40


def finals(stdout):
    return {int(m.group(2)): [float(v) for v in m.group(3).split()] for m in FINAL.finditer(stdout)}


def committed(stdout):
    """{step: world size} of every committed step (all ranks print them)."""
    sizes = {}
    for m in COMMIT.finditer(stdout):
        step, size = int(m.group(1)), int(m.group(2))
        assert sizes.setdefault(step, size) == size, f"step {step} ran at two sizes"
    assert sorted(sizes) == list(range(STEPS)), sorted(sizes)
    return sizes


def replay(sizes):
    """The parameters of the committed steps, recomputed in one process: the
    gradient of step s averaged over ranks 0..size-1 (their data depends only
    on rank and step), SGD with momentum as in the worker."""
    import torch
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 1).double()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        n = sizes[step]
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for rank in range(n):
            g = torch.Generator().manual_seed(1000 * step + rank)
            x = torch.randn(8, 4, generator=g, dtype=torch.float64)
            model.zero_grad()
            torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) * 0.5).backward()
            for acc, p in zip(grads, model.parameters()):
                acc += p.grad
        for acc, p in zip(grads, model.parameters()):
            p.grad = acc / n
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def close_to(got, want):
    return len(got) == len(want) and all(abs(a - b) <= 1e-9 * max(1.0, abs(b))
                                         for a, b in zip(got, want))


def train(hvdrun, tmp_path, victim, kill_at, extra=(), how="kill"):
    marker = tmp_path / f"{how}-{victim}-{kill_at}"
    return run([hvdrun, "-np", "3", "--min-np", "2", "--max-np", "3",
                "--heartbeat-timeout-seconds", "2", *extra, sys.executable, WORKER, str(marker),
                str(victim), str(kill_at), str(STEPS), how, "0.1"], timeout=240, env=ENV)


def check_run(r, victim=None):
    assert r.returncode == 0, r.stdout + r.stderr
    got = finals(r.stdout)
    assert sorted(got) == [0, 1, 2], r.stdout  # back at full size
    assert all(v == got[0] for v in got.values()), got  # identical on every rank
    sizes = committed(r.stdout)
    assert close_to(got[0], replay(sizes)), (got[0], sizes)
    return sizes


def test_killed_worker_is_replaced_and_training_matches(hvdrun, tmp_path):
    assert set(check_run(train(hvdrun, tmp_path, -1, 0)).values()) == {3}
    for victim in (1, 0):  # rank 0 too: the state comes from a survivor, not the replacement
        r = train(hvdrun, tmp_path, victim, 3)
        sizes = check_run(r)
        assert (f"hvdrun: rank {victim} on host localhost was killed by signal 9 (SIGKILL); "
                "started a replacement (reset 1 of 10)") in r.stderr, r.stderr
        # The survivors went on at 2 while the replacement started, then grew back to 3.
        assert sizes[3] == 3 and 2 in sizes.values() and sizes[STEPS - 1] == 3, sizes


def test_stopped_worker_is_killed_and_replaced(hvdrun, tmp_path):
    # SIGSTOP: the worker's heartbeats stop; in an elastic job hvdrun kills
    # it and replaces it instead of ending the job.
    r = train(hvdrun, tmp_path, 2, 4, how="stop")
    check_run(r)
    assert ("hvdrun: rank 2 on host localhost stopped responding: no heartbeat for 2 s; "
            "killing it to replace it") in r.stderr, r.stderr
    assert "rank 2 on host localhost was killed by signal 9 (SIGKILL); started a replacement" \
        in r.stderr, r.stderr


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
