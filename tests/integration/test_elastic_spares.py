"""Hot spares (hvdrun --spares K, docs/elastic.md): K extra workers start with
an elastic job and wait in hvd.init() holding no rank. A worker killed with
SIGKILL is replaced by promoting a waiting spare: the survivors' next round
includes it, so no step runs at the smaller size; a new spare starts in the
background. A spare killed before its promotion is started again. Spares end
with the job. --spares needs an elastic job."""
import os
import pathlib
import sys

from conftest import run
from elastic_replay import STEPS, committed
from test_elastic import ENV, WORKER, check_run


def train(hvdrun, tmp_path, victim, kill_at, env, spares=1):
    spares_dir = tmp_path / "spares"
    spares_dir.mkdir()
    marker = tmp_path / f"kill-{victim}-{kill_at}"
    r = run([hvdrun, "-np", "3", "--min-np", "2", "--max-np", "3", "--spares", str(spares),
             "--heartbeat-timeout-seconds", "2", sys.executable, WORKER, str(marker), str(victim),
             str(kill_at), str(STEPS), "kill", "0.1"], timeout=240,
            env={**ENV, "ELASTIC_FULL_SIZE": "3", "ELASTIC_SPARES_DIR": str(spares_dir), **env})
    return r, spares_dir


def pids(spares_dir):
    return [int(p.read_text()) for p in pathlib.Path(spares_dir).iterdir()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_worker_is_replaced_by_a_waiting_spare_at_full_size(hvdrun, tmp_path):
    r, spares_dir = train(hvdrun, tmp_path, 1, 5, {})
    sizes = check_run(r)
    assert "hvdrun: started hot spare 3 on host localhost" in r.stderr, r.stderr
    assert ("hvdrun: rank 1 on host localhost was killed by signal 9 (SIGKILL); promoted spare 3 "
            "on host localhost into rank 1 (reset 1 of 10)") in r.stderr, r.stderr
    assert "hvdrun: started hot spare 4 on host localhost" in r.stderr, r.stderr
    assert "promoted 2" in r.stdout, r.stdout  # the spare joined last: rank 2
    # The survivors' next round had the spare: no step ran at 2.
    assert set(sizes.values()) == {3}, sizes
    # A recovery that worked: at most one warning line per survivor (the
    # details are at info level), no error line.
    for slot in (0, 2):
        noisy = [line for line in r.stderr.splitlines()
                 if line.startswith(f"[{slot}]<stderr>:") and ("[warning]" in line or
                                                                "[error]" in line)]
        assert len(noisy) <= 1 and not any("[error]" in line for line in noisy), noisy
    assert "hvdrun: the job is back at full size (3 workers)" in r.stderr, r.stderr
    # Spares end with the job (spare 4 was never promoted).
    assert len(pids(spares_dir)) == 2
    assert not any(alive(p) for p in pids(spares_dir)), "a spare outlived the job"


def test_a_spare_killed_before_its_promotion_is_started_again(hvdrun, tmp_path):
    # Rank 0 kills spare 3 after step 2; rank 2 dies after step 12, once
    # spare 4 waits: spare 4 takes its place.
    r, spares_dir = train(hvdrun, tmp_path, 2, 12,
                          {"ELASTIC_KILL_SPARE_AT": "2", "ELASTIC_SPARES_WAIT": "1"})
    sizes = check_run(r)
    assert ("hvdrun: hot spare 3 on host localhost was killed by signal 9 (SIGKILL) before it "
            "was promoted (reset 1 of 10)") in r.stderr, r.stderr
    assert ("rank 2 on host localhost was killed by signal 9 (SIGKILL); promoted spare 4 on host "
            "localhost into rank 2 (reset 2 of 10)") in r.stderr, r.stderr
    assert set(sizes.values()) == {3}, sizes
    assert not any(alive(p) for p in pids(spares_dir)), "a spare outlived the job"


def test_spares_need_an_elastic_job(hvdrun):
    r = run([hvdrun, "-np", "2", "--spares", "1", "/bin/true"], timeout=30)
    assert r.returncode == 2, r.stderr
    assert ("hvdrun: error: --spares 1 needs an elastic job (--min-np, --max-np or "
            "--host-discovery-script)") in r.stderr, r.stderr
