"""The benchmarks' pictures (issue 19 part 5): bench/plots.py draws a table
(title, column names, rows) as bars or lines; every bench script that prints
a table takes --plot FILE.png and hands its table to it; bench/plot_autotune.py
draws the search from an `hvdrun --autotune --autotune-log-file` log. Small
tables stand in for the benchmarks (nothing here runs one); each test checks
that a real PNG was written. Skipped, saying so, where matplotlib is missing.

    /usr/bin/python3 -m pytest -q tests/bench
"""
import pathlib
import struct
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import plots  # noqa: E402

REASON = plots.unavailable_reason()
if REASON:
    pytest.skip(f"no pictures to check: {REASON}", allow_module_level=True)

import plot_autotune  # noqa: E402

# A real log: hvdrun -np 2 --autotune --autotune-warmup-samples 1
# --autotune-steps-per-sample 3 (tests/integration/workers/autotune_worker.py, shm).
SHM_LOG = """\
sample,phase,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_s
1,warmup,67108864,1,1048576,2.84949e+08
2,baseline,67108864,1,1048576,2.95296e+08
3,baseline,67108864,1,1048576,2.91084e+08
4,baseline,67108864,1,1048576,2.82364e+08
5,trial,268435456,1,1048576,2.92839e+08
6,trial,268435456,1,1048576,2.37366e+08
7,trial,268435456,1,1048576,2.50379e+08
8,trial,16777216,1,1048576,2.57208e+08
9,trial,16777216,1,1048576,3.09866e+08
10,trial,16777216,1,1048576,3.21732e+08
11,trial,16777216,1,524288,2.36382e+08
12,trial,16777216,1,524288,2.41607e+08
13,trial,16777216,1,524288,2.78089e+08
14,confirm,67108864,1,1048576,3.12554e+08
15,confirm,16777216,1,1048576,3.1675e+08
16,confirm,67108864,1,1048576,2.8507e+08
17,confirm,16777216,1,1048576,3.10815e+08
# settled: fusion_threshold=67108864 cycle_time_ms=1 chunk_bytes=1048576 after 17 samples \
(defaults kept: the best candidate (fusion_threshold=16777216 cycle_time_ms=1 \
chunk_bytes=1048576) scored 1.5% against them when measured again, within noise 9.0%)
"""

# gloo has no chunk (the column reads 0); the search moved.
GLOO_LOG = """\
sample,phase,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_s
1,baseline,67108864,1,0,1.0e+09
2,baseline,67108864,1,0,1.1e+09
3,baseline,67108864,1,0,1.05e+09
4,trial,16777216,1,0,1.5e+09
5,trial,16777216,1,0,1.6e+09
6,trial,16777216,1,0,1.55e+09
7,confirm,67108864,1,0,1.0e+09
8,confirm,16777216,1,0,1.6e+09
# settled: fusion_threshold=16777216 cycle_time_ms=1 chunk_bytes=0 after 8 samples \
(beat the defaults by 52.4%, more than noise 10.0%)
"""


def assert_png(path, min_width=300):
    """A whole PNG file: signature, an IHDR of sensible size, and matplotlib
    reads its pixels back."""
    data = pathlib.Path(path).read_bytes()
    assert len(data) > 1000, f"{path}: {len(data)} bytes"
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= min_width and height >= 200, (width, height)
    assert data.rstrip(b"\0")[-8:-4] == b"IEND"
    import matplotlib.image
    pixels = matplotlib.image.imread(str(path))
    assert pixels.shape[:2] == (height, width)
    assert pixels.min() < pixels.max(), "a blank picture"
    return width, height


# ---------------------------------------------------------------- plots.py

def test_number_reads_the_cells_the_tables_hold():
    assert plots.number("0.062") == 0.062
    assert plots.number("6.3 ±1.0") == 6.3
    assert plots.number("2.193 (import torch: 0.870)") == 2.193
    assert plots.number("16 MiB") == 16 << 20
    assert plots.number("4K") == 4096
    assert plots.number("1.19x") == 1.19
    assert plots.number(12) == 12.0
    for nothing in ("n/a", "-", "", None, float("nan"), "yes"):
        assert plots.number(nothing) is None, nothing
    assert plots.human_bytes(16 << 20) == "16 MiB"
    assert plots.human_bytes(1536) == "1.5 KiB"


def test_bars_of_a_table_with_a_ratio(tmp_path):
    rows = [("hvd fused", 48.08, 0.37), ("hvd unfused", 47.25, 0.37),
            ("torch per-tensor", 130.61, None), ("torch buckets", 128.76, None)]
    out = plots.table(tmp_path / "bars.png", "ResNet-50 step", ["run", "ms", "hvd / torch"],
                      rows, kind="bars", ratio="hvd / torch", ylabel="ms")
    assert_png(out)


def test_lines_over_sizes_a_panel_per_op_and_the_ratio_below(tmp_path):
    rows = [("allreduce", 4096, 29.6, 306.2, 10.3), ("allreduce", 65536, 80.8, 371.2, 4.59),
            ("allreduce", 64 << 20, 13782.0, 16371.0, 1.19),
            ("reducescatter", 4096, 20.0, None, None), ("reducescatter", 65536, 40.0, None, None)]
    out = plots.table(tmp_path / "lines.png", "sweep", ["op", "size", "hvd us", "torch us",
                                                        "ratio"], rows, kind="lines", x="size",
                      group="op", ratio="ratio", ylabel="us")
    width, _ = assert_png(out)
    assert width > 600  # two panels side by side


def test_a_table_without_rows_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no rows"):
        plots.table(tmp_path / "x.png", "empty", ["a", "b"], [])
    assert not (tmp_path / "x.png").exists()


def test_markdown_tables_of_the_readme_plot_from_the_command_line(tmp_path):
    text = (BENCH / "README.md").read_text()
    tables = plots.markdown_tables(text)
    elastic = [t for t in tables if t[0].startswith("Elastic recovery")][0]
    assert elastic[1][0] == "job" and len(elastic[2]) == 3, elastic
    out = tmp_path / "elastic.png"
    r = subprocess.run([sys.executable, str(BENCH / "plots.py"), str(BENCH / "README.md"),
                        str(out), "--section", "Elastic recovery"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"plot: wrote {out}" in r.stderr and r.stdout == ""
    assert_png(out)
    assert plots.main([str(BENCH / "README.md"), str(tmp_path / "ar.png"), "--section",
                       "Figures (2026-11-21", "--kind", "lines", "--ratio", "ratio"]) == 0
    assert_png(tmp_path / "ar.png")
    with pytest.raises(SystemExit, match="no table 0 under a heading containing 'nowhere'"):
        plots.main([str(BENCH / "README.md"), str(tmp_path / "n.png"), "--section", "nowhere"])


def test_plot_flag_is_refused_before_the_benchmark_runs(tmp_path, monkeypatch):
    plots.check_plot_argument(None)
    plots.check_plot_argument(str(tmp_path / "fine.png"))
    with pytest.raises(SystemExit, match="--plot: folder .* does not exist"):
        plots.check_plot_argument(str(tmp_path / "missing" / "x.png"), "bench")
    monkeypatch.setattr(plots, "unavailable_reason", lambda: "matplotlib is not installed")
    with pytest.raises(SystemExit, match="bench: --plot: matplotlib is not installed"):
        plots.check_plot_argument(str(tmp_path / "x.png"), "bench")


# ---------------------------------------------------------------- each script's table

SCRIPTS = ["compare_collectives.py", "torch_perf.py", "py_latency.py", "resnet50_step.py",
           "autotune.py", "elastic_recovery.py", "startup_latency.py", "gpu_allreduce.py",
           "gpu_train.py"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_that_prints_a_table_takes_plot(script):
    source = (BENCH / script).read_text()
    assert "plots.add_plot_argument(p" in source, script
    assert "plots.check_plot_argument(" in source, script
    assert "--plot FILE.png" in source.split('"""')[1], f"{script}: its docstring says nothing"


def test_compare_collectives_plot(tmp_path):
    import compare_collectives
    table = [("allreduce", 4096, 240.0, 270.0, 1.12), ("allreduce", 1 << 20, 900.0, 1500.0, 1.67),
             ("alltoall", 4096, 300.0, 280.0, 0.93), ("alltoall", 1 << 20, 1200.0, 1000.0, 0.83),
             ("reducescatter", 4096, 200.0, None, None)]
    compare_collectives.plot(str(tmp_path / "c.png"), "2 ranks", table)
    assert_png(tmp_path / "c.png")


def test_elastic_and_startup_plots(tmp_path):
    import elastic_recovery
    import startup_latency
    elastic_recovery.plot(str(tmp_path / "e.png"), 2, 3, [
        ("hvd (survivors in place at N-1, then the replacement joins)", 0.033, 1.244),
        ("torchrun --monitor_interval 0.5 (restarts every worker)", 1.471, 1.471),
        ("hvd --spares 1 (a waiting spare takes the slot at once)", 0.035, 0.057)])
    assert_png(tmp_path / "e.png")
    startup_latency.plot(str(tmp_path / "s.png"), "start-up", [
        ("hvdrun, 3 namespace hosts", 2, "h1:1,h2:1", 0.051, 0.118),
        ("hvdrun, 3 namespace hosts", 8, "h1:3,h2:3,h3:2", 0.183, 0.322),
        ("hvdrun, localhost only", 2, "localhost:2", 0.053, 0.117),
        ("hvdrun, localhost only", 8, "localhost:8", 0.197, 0.420)], (2.193, 6.583, 0.870))
    assert_png(tmp_path / "s.png")


def test_torch_side_plots(tmp_path):
    pytest.importorskip("torch")
    import gpu_allreduce
    import gpu_train
    gpu_allreduce.plot(str(tmp_path / "g.png"), "gpu_allreduce: 1 rank, cpu", [
        (4096, 20e-6, 60e-6, 62e-6, 80e-6), (1 << 20, 100e-6, 110e-6, 112e-6, 130e-6)])
    assert_png(tmp_path / "g.png")
    gpu_train.plot(str(tmp_path / "t.png"), "gpu_train: small CNN, cpu", [
        ("img/s (total)", 410.0, 400.0, 1.025), ("step ms (median)", 9.8, None, None)])
    assert_png(tmp_path / "t.png")


def test_resnet50_and_autotune_bars(tmp_path):
    pytest.importorskip("torchvision")
    import resnet50_step
    results = {"hvd defaults": [58.4, 81.9, 54.1], "hvd autotune": [57.9, 25.7, 31.8],
               "torch buckets": [140.4, 150.0, 139.0]}
    resnet50_step.plot_steps(str(tmp_path / "r.png"), "autotune", results, "hvd autotune")
    assert_png(tmp_path / "r.png")


# ---------------------------------------------------------------- the autotune search

def test_autotune_log_is_read_with_its_settled_line(tmp_path):
    log = tmp_path / "at.csv"
    log.write_text(SHM_LOG)
    samples, settled = plot_autotune.read_log(log)
    assert len(samples) == 17 and samples[0]["phase"] == "warmup"
    assert samples[10]["chunk_bytes"] == 524288
    point, noise = plot_autotune.settled_point(settled)
    assert point == {"fusion_threshold": 67108864, "cycle_time_ms": 1, "chunk_bytes": 1048576}
    assert noise == pytest.approx(0.09)


@pytest.mark.parametrize("text", [SHM_LOG, GLOO_LOG, SHM_LOG.split("# settled")[0]],
                         ids=["shm", "gloo_no_chunk", "not_settled"])
def test_autotune_search_plot(tmp_path, text):
    log, out = tmp_path / "at.csv", tmp_path / "at.png"
    log.write_text(text)
    plot_autotune.plot_search(*plot_autotune.read_log(log), str(out))
    _, height = assert_png(out)
    # A panel per tuned parameter: gloo's has no chunk.
    assert (height < 560) == (text is GLOO_LOG), height


def test_plot_autotune_command(tmp_path):
    log, out = tmp_path / "at.csv", tmp_path / "search.png"
    log.write_text(SHM_LOG)
    r = subprocess.run([sys.executable, str(BENCH / "plot_autotune.py"), str(log), str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert_png(out)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = subprocess.run([sys.executable, str(BENCH / "plot_autotune.py"), str(bad), str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "not an autotune log" in r.stderr, r.stderr
