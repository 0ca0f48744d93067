"""Workers started without hvdrun: torchrun for real, and the variables of
Slurm's srun and Open MPI's mpirun set by the test (neither is installed
here). hvd_init() finds them and rank 0 hosts the rendezvous in-process.

Every process runs in a session of its own; each test waits with a timeout
and checks that every process it started is gone.
"""
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from conftest import BUILD_DIR, Background, assert_all_gone, clear_outer_launcher, executable, run

HERE = pathlib.Path(__file__).resolve().parent
TORCH_WORKER = HERE / "workers" / "foreign_torch_worker.py"


def free_port(pair=False):
    """A port free on 127.0.0.1 (and the next one too when `pair`)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not pair:
            return port
        if port < 65535:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise AssertionError("no free port pair found")


@pytest.fixture(autouse=True)
def no_outer_launcher(monkeypatch):
    clear_outer_launcher(monkeypatch)


@pytest.fixture(scope="module")
def foreign_check():
    return executable("foreign_check")


def start_ranks(program, envs):
    return [Background([program], env=env) for env in envs]


def finish(procs, timeout):
    """Waits for every process; returns their exit codes. Kills what is left."""
    try:
        return [p.wait(timeout) for p in procs]
    finally:
        for p in procs:
            p.close()
        assert_all_gone(pids=[p.proc.pid for p in procs], pgids=[p.proc.pid for p in procs])


def report(procs):
    return "\n".join(f"--- process {i} ---\n" + "\n".join(p.stdout + p.stderr)
                     for i, p in enumerate(procs))


def slurm_env(rank, size, port, **extra):
    env = {
        "SLURM_PROCID": str(rank),
        "SLURM_NTASKS": str(size),
        "SLURM_LOCALID": str(rank),
        "SLURM_NODEID": "0",
        "SLURM_NNODES": "1",
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_TASKS_PER_NODE": str(size),
        "SLURM_JOB_ID": "4242",
        "SLURM_STEP_ID": "0",
        "HVD_RENDEZVOUS_PORT": str(port),
        "HVD_START_TIMEOUT": "60",
    }
    env.update(extra)
    return env


def openmpi_env(rank, size, port):
    return {
        "OMPI_COMM_WORLD_RANK": str(rank),
        "OMPI_COMM_WORLD_SIZE": str(size),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(size),
        "OMPI_MCA_ess_base_jobid": "3473801217",
        "MASTER_PORT": str(port),
        "HVD_START_TIMEOUT": "60",
    }


def expect_worlds(procs, size):
    for rank, p in enumerate(procs):
        assert (f"foreign_check: rank {rank} size {size} local_rank {rank} local_size {size} "
                f"cross_rank 0 cross_size 1") in p.stdout, report(procs)
        assert f"foreign_check: rank {rank} OK" in p.stdout, report(procs)


def test_torchrun():
    python = sys.executable
    if subprocess.run([python, "-c", "import torch.distributed.run"],
                      capture_output=True, timeout=120).returncode != 0:
        pytest.skip(f"{python} has no torch.distributed.run")
    port = free_port(pair=True)
    # --redirects/--tee for a local rank that does not exist: Debian's torch
    # 1.13 torchrun dies at start without them (fixed in torch 2.0).
    torchrun = Background([python, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           "--master_addr", "127.0.0.1", "--master_port", str(port),
                           "--redirects", "9:1", "--tee", "9:1", str(TORCH_WORKER)],
                          env={"PYTHONPATH": str(BUILD_DIR / "python"),
                               "HVD_START_TIMEOUT": "120", "OMP_NUM_THREADS": "1"})
    codes = finish([torchrun], timeout=240)
    assert codes == [0], report([torchrun])
    for rank in range(2):
        assert f"foreign_torch_worker: rank {rank} OK" in torchrun.stdout, report([torchrun])


def test_slurm(foreign_check):
    port = free_port()
    procs = start_ranks(foreign_check, [slurm_env(r, 3, port) for r in range(3)])
    codes = finish(procs, timeout=120)
    assert codes == [0, 0, 0], report(procs)
    expect_worlds(procs, 3)


def test_slurm_rank0_last(foreign_check):
    """The others start first and wait for rank 0's service."""
    port = free_port()
    procs = start_ranks(foreign_check, [slurm_env(r, 3, port) for r in (1, 2)])
    try:
        time.sleep(1.5)
        procs.insert(0, Background([foreign_check], env=slurm_env(0, 3, port)))
    finally:
        codes = finish(procs, timeout=120)
    assert codes == [0, 0, 0], report(procs)
    expect_worlds(procs, 3)


def test_openmpi(foreign_check):
    port = free_port()
    procs = start_ranks(foreign_check, [openmpi_env(r, 2, port) for r in range(2)])
    codes = finish(procs, timeout=120)
    assert codes == [0, 0], report(procs)
    expect_worlds(procs, 2)


def test_bad_variable_is_named(foreign_check):
    port = free_port()
    result = run([foreign_check], timeout=60,
                 env=slurm_env(0, 3, port, SLURM_NTASKS="abc"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "foreign_check: init failed: SLURM_NTASKS='abc' is not a whole number" in result.stdout


def test_rank0_never_starts(foreign_check):
    port = free_port()
    procs = start_ranks(foreign_check,
                        [slurm_env(r, 3, port, HVD_START_TIMEOUT="3") for r in (1, 2)])
    codes = finish(procs, timeout=60)
    assert codes == [1, 1], report(procs)
    for p in procs:
        line = next((l for l in p.stdout if "init failed" in l), "")
        assert f"the job's rendezvous at 127.0.0.1:{port} did not answer within 3 s" in line, \
            report(procs)
        assert "rank 0 hosts it when slurm starts the job" in line, report(procs)


def test_port_in_use_is_named(foreign_check):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run([foreign_check], timeout=60, env=slurm_env(0, 2, port))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"rank 0 cannot host the job's rendezvous on port {port}" in result.stdout
    assert "set HVD_RENDEZVOUS_PORT to a free port" in result.stdout


def test_collectives_under_slurm():
    """The whole collectives check (it also shuts down and joins again)."""
    program = executable("collectives_check")
    port = free_port()
    procs = start_ranks(program, [slurm_env(r, 2, port) for r in range(2)])
    codes = finish(procs, timeout=240)
    assert codes == [0, 0], report(procs)
    for rank, p in enumerate(procs):
        assert f"collectives_check: rank {rank} of 2 OK" in p.stdout, report(procs)
