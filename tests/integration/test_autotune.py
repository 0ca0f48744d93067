"""hvdrun --autotune end to end: two ranks allreduce gradient-like tensors
(workers/autotune_worker.py) while rank 0 tunes the fusion threshold, the
cycle time and (on shm) the transport's chunk; every result stays exact
throughout, the log holds every sample and a settled line, and the job
completes. (Convergence to the best parameters is proven on a synthetic
score in tests/unit/runtime/autotune/, where timing noise cannot make it flaky.)"""
import csv
import pathlib

import pytest

from conftest import BUILD_DIR, run, worker_lines

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = SOURCE / "tests" / "integration" / "workers" / "autotune_worker.py"
PY_ENV = {"PYTHONPATH": str(SOURCE / "python"),
          "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
          "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
HEADER = ["sample", "phase", "fusion_threshold", "cycle_time_ms", "chunk_bytes",
          "score_bytes_per_s"]
PHASES = ["warmup", "baseline", "trial", "confirm"]


def read_log(path):
    lines = pathlib.Path(path).read_text().splitlines()
    assert lines, f"{path} is empty"
    assert lines[0].split(",") == HEADER, lines[0]
    assert lines[-1].startswith("# settled: "), lines[-1]
    assert sum(line.startswith("#") for line in lines) == 1, lines
    rows = list(csv.DictReader(lines[1:-1], fieldnames=HEADER))
    return rows, lines[-1]


def check_job(r, np):
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(np):
        assert any(l.startswith(f"autotune_worker: rank {rank} OK") for l in lines.get(rank, [])), \
            r.stdout


@pytest.mark.parametrize("transport", ["shm", "gloo"])
def test_autotune_tunes_settles_and_keeps_results_exact(hvdrun, tmp_path, transport):
    log = tmp_path / "autotune.csv"
    r = run([hvdrun, "-np", "2", "--autotune", "--autotune-log-file", str(log),
             "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "3",
             "--autotune-max-samples", "30", "--log-level", "info", "--cpu-transport", transport,
             "/usr/bin/python3", str(WORKER), str(log)],
            timeout=240, env=PY_ENV)
    check_job(r, 2)
    rows, settled = read_log(log)

    # Every sample, numbered in order; the first is the warm-up at the defaults.
    assert [int(row["sample"]) for row in rows] == list(range(1, len(rows) + 1))
    assert 1 + 3 <= len(rows) <= 1 + 30, rows
    assert all(row["phase"] in PHASES for row in rows), rows
    assert [row["phase"] for row in rows[:4]] == ["warmup"] + ["baseline"] * 3
    assert all(float(row["score_bytes_per_s"]) > 0 for row in rows)
    defaults = (str(64 << 20), "1")
    assert all((row["fusion_threshold"], row["cycle_time_ms"]) == defaults
               for row in rows[:4]), rows[:4]
    assert any(row["phase"] == "trial" for row in rows), rows
    # The chunk is tuned where the transport has one (shm), and only there.
    chunks = {int(row["chunk_bytes"]) for row in rows}
    assert chunks == {0} if transport == "gloo" else 0 not in chunks, chunks

    # The settled parameters are the defaults or a candidate that was tried.
    tried = {(row["fusion_threshold"], row["cycle_time_ms"], row["chunk_bytes"]) for row in rows}
    words = dict(w.split("=") for w in settled[len("# settled: "):].split(" ")[:3])
    assert (words["fusion_threshold"], words["cycle_time_ms"], words["chunk_bytes"]) in tried
    assert "defaults kept" in settled or "beat the defaults by" in settled, settled
    # The one-line info log of rank 0.
    assert "autotune settled: " + settled[len("# settled: "):] in r.stdout + r.stderr


def test_horovod_names_turn_autotune_on(hvdrun, tmp_path):
    log = tmp_path / "h.csv"
    env = {**PY_ENV, "HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": str(log),
           "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "0", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2",
           "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "4"}
    r = run([hvdrun, "-np", "2", "/usr/bin/python3", str(WORKER), str(log), "--after-steps", "5"],
            timeout=180, env=env)
    check_job(r, 2)
    rows, settled = read_log(log)
    # No warm-up; 4 samples leave no room for a trial and its confirmation.
    assert [row["phase"] for row in rows] == ["baseline"] * 3, rows
    assert "defaults kept" in settled and "sample budget of 4 reached" in settled, settled


def test_bad_autotune_flag_is_one_line_naming_it(hvdrun):
    r = run([hvdrun, "-np", "1", "--autotune-max-samples", "lots", "true"], timeout=30)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "'lots'" in r.stderr, r.stderr
