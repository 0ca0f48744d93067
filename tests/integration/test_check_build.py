"""hvdrun --check-build: exit 0, hvd's version, every transport with its device
and whether it can run here, the NCCL plugin found (beside libhvd.so) or why
not, and the features; no command needed, no worker started. Also: CPU jobs
do not notice the NCCL plugin, and naming it as the CPU transport is refused."""
import re

from conftest import BUILD_DIR, executable, run

NCCL_PLUGIN = BUILD_DIR / "lib" / "libhvd_nccl.so"


def check_build(hvdrun, *extra):
    r = run([hvdrun, "--check-build", *extra], timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout


def test_lists_version_transports_and_features(hvdrun):
    out = check_build(hvdrun)
    assert re.match(r"hvd v\d+\.\d+\.\d+:\n", out), out
    assert "transport plugin ABI version 4 (loads plugins of versions 1 to 4)" in out
    assert "    [X] gloo (cpu)\n" in out
    assert "    [X] shm (cpu)\n" in out
    assert re.search(r"^    \[[ X]\] nccl \(cuda\)", out, re.M), out
    assert "[X] elastic training" in out and "[X] timeline" in out


def test_names_the_nccl_plugin_or_why_it_is_missing(hvdrun):
    out = check_build(hvdrun)
    line = next(l for l in out.splitlines() if "libhvd_nccl.so (nccl): " in l)
    if NCCL_PLUGIN.is_file():
        assert line == (f"    [X] libhvd_nccl.so (nccl): loaded from {NCCL_PLUGIN}, "
                        "ABI version 4"), line
        nccl = next(l for l in out.splitlines() if "] nccl (cuda)" in l)
        # Available where a CUDA device is usable; otherwise it says why.
        assert nccl == "    [X] nccl (cuda)" or ": cannot run here: " in nccl, nccl
    else:
        assert line.startswith("    [ ] libhvd_nccl.so (nccl): transport plugin "
                               "libhvd_nccl.so cannot be loaded: "), line
        assert "    [ ] nccl (cuda): cannot run here: " in out


def test_needs_no_command_and_ignores_other_flags(hvdrun):
    assert check_build(hvdrun, "-np", "2") == check_build(hvdrun)


def test_cpu_jobs_are_unaffected_by_the_nccl_plugin(hvdrun):
    """With libhvd_nccl.so beside libhvd.so (refusing: no GPU, or no collectives
    yet), CPU collectives run as before: the plugin is not even loaded."""
    r = run([hvdrun, "-np", "2", executable("allreduce_demo")], timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(" OK") >= 2, r.stdout
    assert "nccl" not in r.stderr


def test_a_cpu_transport_setting_naming_nccl_is_refused_clearly(hvdrun):
    r = run([hvdrun, "-np", "1", executable("allreduce_demo")], timeout=60,
            env={"HVD_CPU_TRANSPORT": "nccl"})
    assert r.returncode != 0
    assert "transport 'nccl' is for cuda tensors, not cpu tensors" in r.stderr, r.stderr


def test_shows_the_gpu_transport_and_listed_plugins(hvdrun):
    plugin = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_plugin.so"
    assert "CUDA tensors go to HVD_GPU_TRANSPORT=auto " in check_build(hvdrun)
    r = run([hvdrun, "--check-build"], timeout=60,
            env={"HVD_GPU_TRANSPORT": "fakecuda",
                 "HVD_TRANSPORT_PLUGINS": f"fakecuda:cuda:{plugin}"})
    assert r.returncode == 0, r.stderr
    assert "    [X] fakecuda (cuda)\n" in r.stdout, r.stdout
    assert f"    [X] {plugin} (fakecuda): loaded from {plugin}, ABI version 4\n" in r.stdout
    assert "CUDA tensors go to HVD_GPU_TRANSPORT=fakecuda " in r.stdout


def test_a_malformed_plugin_list_is_one_line_naming_it(hvdrun):
    r = run([hvdrun, "--check-build"], timeout=60,
            env={"HVD_TRANSPORT_PLUGINS": "fakecuda:gpu:libx.so"})
    assert r.returncode == 2
    assert ("transport_plugins: device 'gpu' in 'fakecuda:gpu:libx.so' is neither cpu nor cuda"
            in r.stderr), r.stderr
