"""Hierarchical allreduce of device ops across two "hosts" (network
namespaces h1 and h2, one hvd-agent each; conftest.py), without a GPU: the
fakecuda test plugin (tests/unit/transports/plugins/fake_cuda_plugin.c) is the
GPU transport, its "device" memory host memory. With -H h1:2,h2:2 and
HOROVOD_HIERARCHICAL_ALLREDUCE=1 passed with -x, every rank checks its device
allreduces (sum and average, float32 and int32, uneven counts), that they ran
as the plugin's reduce-scatter and allgather within its host (gloo across),
and every other device op on the flat plugin world
(tests/integration/workers/gpu_routing_worker.py, mode "hierarchical").
"""
import pathlib

from conftest import BUILD_DIR, PYTHON, worker_lines

WORKER = pathlib.Path(__file__).resolve().parents[1] / "integration" / "workers" / \
    "gpu_routing_worker.py"
PLUGIN = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_plugin.so"


def test_device_allreduce_is_hierarchical_on_two_hosts_of_two_ranks(plain_agents, hvdrun,
                                                                   secret):
    assert PLUGIN.is_file(), f"the fakecuda test plugin is not built: {PLUGIN}"
    r = hvdrun(["-np", "4", "-H", "h1:2,h2:2", "--secret-file", secret, "--log-level", "info",
                "--gpu-transport", "fakecuda", "--transport-plugins", f"fakecuda:cuda:{PLUGIN}",
                "-x", "HOROVOD_HIERARCHICAL_ALLREDUCE=1",
                "-x", f"PYTHONPATH={BUILD_DIR / 'python'}", "-x", "PYTHONDONTWRITEBYTECODE=1",
                PYTHON, str(WORKER), "hierarchical", str(PLUGIN), "hier"], timeout=90)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(4):
        assert f"ok rank {rank}" in lines.get(rank, []), r.stdout
        assert any(line.startswith("hierarchical hier: ") for line in lines[rank]), r.stdout
    assert ("device allreduce of this process set is hierarchical (2 hosts of 2 ranks): "
            "fakecuda within each host, gloo across") in r.stderr, r.stderr
