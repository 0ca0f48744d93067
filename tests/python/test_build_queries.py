"""Build and environment queries (mpi_built() ... rocm_built()): answered by
libhvd (hvd_build_feature), with horovod.common.basics's types and rules."""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import hvd
import hvd.torch as ht
from hvd import _lib

QUERIES = ("mpi_built", "mpi_enabled", "gloo_built", "gloo_enabled", "nccl_built",
           "ddl_built", "ccl_built", "cuda_built", "rocm_built")
PROBE = "import hvd.torch as h; print(h.nccl_built(), h.cuda_built(), h.gloo_enabled())"


def plugin_beside(library):
    return os.path.isfile(os.path.join(os.path.dirname(library), "libhvd_nccl.so"))


def probe(library, **env):
    """PROBE's output in a fresh interpreter that loads `library` (no init)."""
    run_env = dict(os.environ, HVD_LIBRARY=library, **env)
    r = subprocess.run([sys.executable, "-c", PROBE], env=run_env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_answers_and_types():
    nccl = plugin_beside(_lib.path)
    assert ht.gloo_built() is True
    assert ht.gloo_enabled() is True
    assert ht.mpi_built() is False and ht.mpi_enabled() is False
    assert ht.ddl_built() is False and ht.ccl_built() is False and ht.rocm_built() is False
    assert ht.cuda_built() is nccl
    assert type(ht.nccl_built()) is int  # Horovod's type: an int, 0 when not built
    assert bool(ht.nccl_built()) is nccl
    if nccl:  # Horovod's value: NCCL's version code (2.28.9: 22809), >= 2700 for alltoall
        assert ht.nccl_built() >= 2700, ht.nccl_built()


def test_the_library_answers():
    lib = ctypes.CDLL(_lib.path)  # the same library, asked directly
    lib.hvd_build_feature.restype = ctypes.c_int
    lib.hvd_build_feature.argtypes = [ctypes.c_char_p]
    for name in QUERIES:
        assert getattr(ht, name)() == lib.hvd_build_feature(name.encode()), name
        assert getattr(ht, name) is getattr(hvd, name), name  # one implementation
    assert lib.hvd_build_feature(b"adasum_built") == -_lib.C.ERR_NOT_FOUND


def test_mpi_threads_supported_needs_mpi():
    with pytest.raises(ValueError, match="MPI is not enabled"):
        ht.mpi_threads_supported()


def test_nccl_plugin_beside_the_library():
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "libhvd.so")
        shutil.copy(_lib.path, copy)
        assert probe(copy) == ["0", "False", "True"]
        open(os.path.join(d, "libhvd_nccl.so"), "wb").close()
        code, cuda, gloo = probe(copy)
        assert (cuda, gloo) == ("True", "True")
        # NCCL's version code of this build's plugin (1: built without one).
        assert int(code) >= 1
        if plugin_beside(_lib.path):
            assert int(code) == ht.nccl_built() >= 2700


def test_gloo_enabled_follows_the_cpu_transport():
    assert probe(_lib.path, HVD_CPU_TRANSPORT="shm")[2] == "False"
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HVD_LIBRARY=_lib.path, HVD_START_TIMEOUT="soon"))
    assert r.returncode != 0
    assert "HVD_START_TIMEOUT" in r.stderr
