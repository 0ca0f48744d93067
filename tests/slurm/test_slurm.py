"""hvd on a real Slurm cluster (conftest.py): srun and sbatch start the workers, no hvdrun.

Nodes h1 (10.78.0.11) and h2 (10.78.0.12) resolve nowhere: the ranks reach rank 0's
node at the NodeAddr Slurm gives for it. Every job trains a tiny model
(workers/slurm_train.py) that checks hvd's world against Slurm's variables and ends
with the same parameters on every rank.
"""
import os
import re
import stat
import time

from conftest import PYTHON, SBATCH, WORKER, train_lines


def srun(slurm, options, task_env, worker_args=(), timeout=90, check=True, env=None):
    """srun OPTIONS python3 slurm_train.py WORKER_ARGS, from the submit host."""
    return slurm.run(["srun", *options, PYTHON, WORKER, *worker_args], timeout=timeout,
                     env={**task_env, **(env or {})}, check=check)


def sbatch(slurm, options, task_env, cwd):
    """sbatch OPTIONS deploy/slurm/hvd.sbatch until the job ends; its output file."""
    job, state, code = slurm.submit([*options, SBATCH], timeout=120, cwd=cwd,
                                    env={**task_env, "TRAIN": str(WORKER)})
    out = cwd / f"hvd-{job}.out"
    text = out.read_text() if out.exists() else ""
    assert state == "COMPLETED", f"batch job {job}: {state}, exit code {code}\n{text}"
    return text


def nodes_of(lines):
    return {rank: re.search(r" node (\S+) ", line).group(1) for rank, line in lines.items()}


def test_srun_one_node(slurm, task_env):
    r = srun(slurm, ["-N1", "-n2", "-w", "h1"], task_env)
    lines = train_lines(r.stdout)
    assert sorted(lines) == [0, 1], r.stdout + r.stderr
    assert set(nodes_of(lines).values()) == {"h1"}


def test_srun_two_nodes_meet_at_the_node_address(slurm, task_env):
    begin = time.monotonic()
    r = srun(slurm, ["-N2", "--ntasks-per-node=2"], task_env)
    lines = train_lines(r.stdout)
    assert sorted(lines) == [0, 1, 2, 3], r.stdout + r.stderr
    assert nodes_of(lines) == {0: "h1", 1: "h1", 2: "h2", 3: "h2"}
    assert all("local " + str(rank % 2) + "/2" in line for rank, line in lines.items())
    # Nobody waited out a start timeout for a host name that does not resolve.
    assert time.monotonic() - begin < 60


def test_a_node_name_without_an_address_fails_at_once(slurm, task_env, tmp_path):
    # A Slurm that gives no NodeAddr (an scontrol that fails) leaves the name h1,
    # which resolves nowhere: every rank fails at once, in words for its rank.
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'scontrol: error: unavailable' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    begin = time.monotonic()
    r = srun(slurm, ["-N2", "--ntasks-per-node=1"], task_env, check=False,
             env={"PATH": f"{tmp_path}:{os.environ['PATH']}", "HVD_START_TIMEOUT": "60"})
    took = time.monotonic() - begin
    assert r.returncode != 0, r.stdout + r.stderr
    assert took < 40, f"took {took:.1f} s: the ranks waited instead of failing at once"
    where = "at 'h1' (Slurm node h1, the first of SLURM_STEP_NODELIST, by name: Slurm gave " \
            "no address for it), which does not resolve on this host"
    assert ("this rank (rank 0) hosts the job's rendezvous, and every rank reaches it " + where
            in r.stderr), r.stderr
    assert "rank 0 hosts the job's rendezvous " + where in r.stderr, r.stderr
    assert "set HVD_RENDEZVOUS_HOST to the address of rank 0's host" in r.stderr
    assert "did rank 0 start" not in r.stderr


def test_a_killed_task_ends_the_step(slurm, task_env):
    begin = time.monotonic()
    r = srun(slurm, ["-N2", "--ntasks-per-node=2", "--kill-on-bad-exit=1"], task_env,
             ["--steps", "100000", "--die-rank", "3", "--die-at", "3"], check=False)
    took = time.monotonic() - begin
    assert r.returncode != 0, r.stdout + r.stderr
    assert "slurm_train: rank 3 on node h2 kills itself" in r.stdout, r.stdout + r.stderr
    # Slurm names the task (= hvd rank) and its node, and ends the step.
    assert "srun: error: h2: task 3: Killed" in r.stderr, r.stderr
    assert took < 60, f"the step took {took:.1f} s to end"
    assert not train_lines(r.stdout)


def test_sbatch_the_deploy_script_with_its_defaults(slurm, task_env, tmp_path):
    # deploy/slurm/hvd.sbatch as shipped: 1 node, 2 tasks, 1 CPU each.
    out = sbatch(slurm, [], task_env, tmp_path)
    lines = train_lines(out)
    assert sorted(lines) == [0, 1], out
    assert len(set(nodes_of(lines).values())) == 1


def test_sbatch_the_deploy_script_on_two_nodes(slurm, task_env, tmp_path):
    # The lines the script says to adapt, given on the command line.
    out = sbatch(slurm, ["--nodes=2", "--ntasks-per-node=2"], task_env, tmp_path)
    lines = train_lines(out)
    assert sorted(lines) == [0, 1, 2, 3], out
    assert nodes_of(lines) == {0: "h1", 1: "h1", 2: "h2", 3: "h2"}
