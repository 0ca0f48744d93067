"""An elastic hvdrun job inside a Slurm allocation, its hosts found by asking Slurm.

sbatch -N2 --ntasks-per-node=2 runs a batch script (on h1) that starts hvdrun with
--host-discovery-script deploy/slurm/hvd-discover-hosts.sh: the allocation's nodes
that Slurm counts as usable, at their NodeAddr (h1, h2 resolve nowhere). An hvd-agent
runs on each node (tests/multihost/conftest.py's Agents). The job starts at 4 workers;
the test drains h2 mid-run, the script stops listing it, and the job finishes at 2.
"""
import importlib.util
import os
import re
import secrets
import time

import pytest

from conftest import PYTHON, REPO, built

WORKER = REPO / "tests" / "slurm" / "workers" / "slurm_elastic.py"
DISCOVER = REPO / "deploy" / "slurm" / "hvd-discover-hosts.sh"
STEPS = 60


def multihost_agents():
    """tests/multihost/conftest.py's Agents class (a module of another name here)."""
    spec = importlib.util.spec_from_file_location(
        "multihost_conftest", REPO / "tests" / "multihost" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Agents


@pytest.fixture
def agents(slurm):
    secret = slurm.dir / "agent.secret"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    a = multihost_agents()(slurm.net, str(secret), None)
    try:
        a.ensure(tls=False)
        yield a
    finally:
        a.stop_all()


def steps_at(text):
    """[(step, size)] rank 0 printed, in order."""
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"slurm_elastic: step (\d+) size (\d+)", text)]


def test_elastic_job_follows_the_allocation(slurm, agents, task_env, tmp_path):
    script = tmp_path / "elastic.sbatch"
    script.write_text(f"""#!/bin/bash
#SBATCH --output={tmp_path}/elastic-%j.out
exec {built('bin/hvdrun')} --min-np 2 --max-np 4 \\
  --host-discovery-script {DISCOVER} --discovery-interval 1 \\
  --secret-file {agents.secret} -x PYTHONPATH -x HVD_LIBRARY -x OMP_NUM_THREADS \\
  {PYTHON} {WORKER} {STEPS}
""")
    r = slurm.run(["sbatch", "--parsable", "-N2", "--ntasks-per-node=2", script], timeout=30,
                  env=task_env, cwd=tmp_path)
    job = r.stdout.strip().split(";")[0]
    out = tmp_path / f"elastic-{job}.out"

    def text():
        return out.read_text(errors="replace") if out.exists() else ""

    def job_state():
        r = slurm.run(["scontrol", "show", "job", "-o", job], timeout=10, check=False)
        return dict(f.split("=", 1) for f in r.stdout.split() if "=" in f).get("JobState")

    # Running at full size: the script listed both nodes.
    deadline = time.monotonic() + 90
    while not any(size == 4 for _, size in steps_at(text())):
        assert time.monotonic() < deadline and job_state() in ("PENDING", "RUNNING"), \
            f"the job never ran at 4 workers ({job_state()})\n{text()}\n{slurm.logs()}"
        time.sleep(0.2)
    # An admin drains h2: Slurm no longer counts it, the job leaves it.
    slurm.run(["scontrol", "update", "nodename=h2", "state=drain", "reason=hvd-elastic-test"],
              timeout=10)
    try:
        deadline = time.monotonic() + 120
        while job_state() in ("PENDING", "RUNNING", "COMPLETING"):
            assert time.monotonic() < deadline, f"the job did not end\n{text()}"
            time.sleep(0.2)
    finally:
        slurm.run(["scontrol", "update", "nodename=h2", "state=resume"], timeout=10, check=False)
    log = text()
    assert job_state() == "COMPLETED", f"{job_state()}\n{log}\n{slurm.logs()}"
    steps = steps_at(log)
    sizes = [size for _, size in steps]
    assert 4 in sizes and sizes[-1] == 2, log
    assert sizes.index(2) > sizes.index(4), log  # it shrank, after running at 4
    assert "host discovery: host 10.78.0.12 is no longer listed" in log, log
    assert "slurm_elastic: done at size 2" in log, log
    assert max(step for step, _ in steps) == STEPS - 1, log
