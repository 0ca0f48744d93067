"""Shared set-up of the Python tests.

Every test file runs under ``hvdrun -np N``: every rank runs the same tests
in the same order, so their collectives meet. hvd is initialized once per
process, here; a test that fails on one rank makes that rank exit (pytest
-x), and hvdrun then stops the others, so nothing waits forever. Waits in
the tests also carry a timeout (WAIT_S).
"""

import os

import pytest
import torch

import hvd.torch as hvd

WAIT_S = 60.0

torch.set_num_threads(1)  # several ranks share few cores
hvd.init()


@pytest.fixture(scope="session", autouse=True)
def _hvd_session():
    yield
    if hvd.is_initialized():
        hvd.shutdown()


@pytest.fixture
def world():
    """(rank, size)."""
    return hvd.rank(), hvd.size()


def pytest_report_header(config):
    return [f"hvd rank {hvd.rank()} of {hvd.size()}, libhvd {os.environ.get('HVD_LIBRARY', '')}"]
