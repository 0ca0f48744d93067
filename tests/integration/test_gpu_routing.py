"""Device ops routed to the GPU transport (HVD_GPU_TRANSPORT), without a GPU:
the fakecuda test plugin (tests/unit/transports/plugins/fake_cuda_plugin.c)
declares the CUDA device and computes on host memory, so ops with a device
run through it for real under hvdrun -np 2, CPU ops beside them staying on
the CPU transport; a GPU transport that cannot run here fails device ops
with its reason and leaves CPU ops alone; a bad name fails hvd.init()."""
import pathlib
import sys

import pytest

from conftest import BUILD_DIR, run

HERE = pathlib.Path(__file__).resolve().parent
WORKER = str(HERE / "workers" / "gpu_routing_worker.py")
PYTHON_DIR = str(HERE.parents[1] / "python")
PLUGIN = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_plugin.so"
PLUGIN_V1 = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_v1_plugin.so"


def job(hvdrun, np_, args, hvdrun_args=(), **env):
    base = {"PYTHONPATH": PYTHON_DIR, "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
            "PYTHONDONTWRITEBYTECODE": "1"}
    base.update(env)
    return run([hvdrun, "-np", str(np_), *hvdrun_args, sys.executable, WORKER, *args],
               timeout=120, env=base)


def test_device_ops_run_on_the_plugin_and_cpu_ops_do_not(hvdrun):
    assert PLUGIN.is_file(), f"the fakecuda test plugin is not built: {PLUGIN}"
    r = job(hvdrun, 2, ["routed", str(PLUGIN)], HVD_GPU_TRANSPORT="fakecuda",
            HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok rank 0" in r.stdout and "ok rank 1" in r.stdout, r.stdout


@pytest.mark.parametrize("np_,chunk", [(2, "4194304"), (3, "12")])
def test_staged_device_ops_run_on_the_cpu_transport_through_the_device_copies(hvdrun, np_,
                                                                              chunk):
    # HVD_GPU_TRANSPORT=gloo: fakecuda provides only the device work. A
    # 12-byte chunk stages allreduces an element or three at a time, each
    # chunk's copy to the host overlapping the reduction of the one before
    # on fakecuda's asynchronous stream.
    r = job(hvdrun, np_, ["staged", str(PLUGIN)], hvdrun_args=["--log-level", "info"],
            HVD_GPU_TRANSPORT="gloo", HVD_GPU_STAGING_PLUGIN="fakecuda",
            HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN}", HVD_GPU_STAGING_CHUNK=chunk)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(np_):
        assert f"ok rank {rank}" in r.stdout, r.stdout
    # One host: staged to shm, the host's best CPU transport (not gloo's TCP).
    assert ("CUDA tensors of this process set are staged through pinned host memory to the "
            "CPU transport shm (HVD_GPU_TRANSPORT=gloo: ") in out, out


def test_staging_without_device_functions_says_why(hvdrun):
    r = job(hvdrun, 2, ["v1"], HVD_GPU_TRANSPORT="gloo", HVD_GPU_STAGING_PLUGIN="fakecuda",
            HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN_V1}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok rank 0" in r.stdout and "ok rank 1" in r.stdout, r.stdout


def test_a_version_1_cuda_plugin_fails_device_ops_saying_so(hvdrun):
    assert PLUGIN_V1.is_file(), f"the version-1 fakecuda plugin is not built: {PLUGIN_V1}"
    r = job(hvdrun, 2, ["v1"], HVD_GPU_TRANSPORT="fakecuda",
            HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN_V1}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok rank 0" in r.stdout and "ok rank 1" in r.stdout, r.stdout
    assert (f"device op refused: HVD_GPU_TRANSPORT=fakecuda: transport plugin {PLUGIN_V1} has "
            "ABI version 1: no device functions; device ops need version 2") in r.stdout, r.stdout


def test_nccl_without_a_gpu_fails_device_ops_only(hvdrun):
    r = job(hvdrun, 2, ["refused"], HVD_GPU_TRANSPORT="nccl")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok rank 0" in r.stdout and "ok rank 1" in r.stdout, r.stdout
    assert "device op refused: HVD_GPU_TRANSPORT=nccl cannot run here: " in r.stdout


def test_auto_does_not_fall_back_silently(hvdrun):
    r = job(hvdrun, 2, ["refused"])  # auto: nccl cannot run here, so device ops fail
    assert r.returncode == 0, r.stdout + r.stderr
    assert "device op refused: HVD_GPU_TRANSPORT=auto cannot run here: nccl: " in r.stdout


def test_a_bad_gpu_transport_is_refused_naming_it(hvdrun):
    # hvdrun checks it before launching (launcher/worker_settings.h): exit 2.
    r = job(hvdrun, 1, ["routed", str(PLUGIN)], HVD_GPU_TRANSPORT="bogus")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("hvdrun: error: HVD_GPU_TRANSPORT: 'bogus' is not a transport for CUDA tensors; "
            "choose one of: auto, gloo, nccl") in r.stderr, r.stderr


# Hierarchical allreduce (HVD_HIERARCHICAL_ALLREDUCE; two "hosts" on this
# machine: -H localhost:2,127.0.0.1:2). Each case turns the setting on its
# own way: Horovod's name through -x (not hidden by hvdrun's own
# HVD_HIERARCHICAL_ALLREDUCE), hvdrun's flag, the environment.
HIER_LINE = ("device allreduce of this process set is hierarchical (2 hosts of 2 ranks): "
             "fakecuda within each host, gloo across")


@pytest.mark.parametrize("np_,hosts,turn_on,expect,why", [
    (4, "localhost:2,127.0.0.1:2", "-x", "hier", None),
    (3, "localhost:2,127.0.0.1:1", "--flag", "flat",
     "its hosts have unequal numbers of ranks (2, 1)"),
    (2, "localhost:2", "env", "flat", "every rank of the set is on one host"),
])
def test_hierarchical_allreduce_of_device_ops(hvdrun, np_, hosts, turn_on, expect, why):
    args = ["-H", hosts, "--log-level", "info"]
    env = {}
    if turn_on == "-x":
        args += ["-x", "HOROVOD_HIERARCHICAL_ALLREDUCE=1"]
    elif turn_on == "--flag":
        args += ["--hierarchical-allreduce"]
    else:
        env["HVD_HIERARCHICAL_ALLREDUCE"] = "1"
    r = job(hvdrun, np_, ["hierarchical", str(PLUGIN), expect], hvdrun_args=args,
            HVD_GPU_TRANSPORT="fakecuda", HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN}", **env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(np_):
        assert f"ok rank {rank}" in r.stdout, out
    if expect == "hier":
        assert HIER_LINE in out, out
    else:
        assert ("hierarchical allreduce is on (HVD_HIERARCHICAL_ALLREDUCE) but this process "
                f"set's device ops use the flat transport (fakecuda): {why}") in out, out
        assert out.count("but this process set's device ops use the flat") == 1, out  # once


def test_hierarchical_allreduce_staged_reuses_the_cpu_hierarchical_transport(hvdrun):
    r = job(hvdrun, 4, ["staged", str(PLUGIN)],
            hvdrun_args=["-H", "localhost:2,127.0.0.1:2", "--log-level", "info",
                         "--hierarchical-allreduce"],
            HVD_GPU_TRANSPORT="gloo", HVD_GPU_STAGING_PLUGIN="fakecuda",
            HVD_TRANSPORT_PLUGINS=f"fakecuda:cuda:{PLUGIN}")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(4):
        assert f"ok rank {rank}" in r.stdout, out
    assert ("device allreduce of this process set is hierarchical (2 hosts of 2 ranks): staged "
            "through host memory to the CPU hierarchical transport") in out, out
