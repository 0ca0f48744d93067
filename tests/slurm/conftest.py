"""Fixtures for the Slurm tests: a real Slurm cluster of two namespace nodes.

    slurm     (module)   slurmctld + munged in the root namespace, slurmd h1 and h2 in
                         namespaces hvdsl-h1/-h2 on bridge hvdsl-br (slurm_cluster.py,
                         tests/multihost/netns.py); skips, saying why, without root,
                         slurm-wlm or munge
    task_env  (function) what srun/sbatch hand the tasks: PYTHONPATH at python/,
                         HVD_LIBRARY at the build's libhvd.so

Whatever a test started is stopped and the namespaces deleted even when it fails.
"""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "multihost"))
import netns  # noqa: E402
import slurm_cluster  # noqa: E402

BUILD_DIR = pathlib.Path(os.environ.get("HVD_BUILD_DIR", REPO / "build"))
PYTHON = os.environ.get("HVD_PYTHON", "/usr/bin/python3")
WORKER = HERE / "workers" / "slurm_train.py"
SBATCH = REPO / "deploy" / "slurm" / "hvd.sbatch"
PREFIX, SUBNET = "hvdsl", "10.78.0"


def built(name):
    path = BUILD_DIR / name
    assert path.exists(), f"{name} is not built: expected {path}"
    return str(path)


@pytest.fixture(scope="module")
def slurm():
    reason = slurm_cluster.unavailable_reason() or netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    netns.install_sigterm_teardown()
    net = netns.Cluster(2, prefix=PREFIX, subnet=SUBNET)
    try:
        net.setup()
    except RuntimeError as e:
        pytest.skip(f"cannot build the namespace nodes here: {e}")
    cluster = slurm_cluster.SlurmCluster(net)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        net.teardown()
        if net.leaks:
            print(f"slurm teardown killed leaked processes: {net.leaks}")


@pytest.fixture
def task_env():
    return {"PYTHONPATH": str(REPO / "python"), "HVD_LIBRARY": built("lib/libhvd.so"),
            "OMP_NUM_THREADS": "1", "HVD_START_TIMEOUT": "30"}


def train_lines(text):
    """{rank: line} of the worker's success lines."""
    lines = {}
    for line in text.splitlines():
        if line.startswith("slurm_train: rank ") and line.endswith(", in sync"):
            rank = int(line.split()[2].split("/")[0])
            lines[rank] = line
    return lines
