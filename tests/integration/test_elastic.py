"""Elastic jobs (docs/elastic.md): hvdrun --min-np/--max-np replaces a worker
killed with SIGKILL on its host; the survivors recover in place through
hvd.elastic.run, going on at the smaller size while the replacement starts,
and grow back when it joins; training completes with parameters identical on
every rank and equal to a replay of the committed steps at the sizes they
ran at. The same holds when a worker raises, when the job grows to
--max-np, and when host discovery adds and removes hosts. Bad elastic flags
are usage errors; the reset limit ends a job that keeps failing; a host
whose workers keep failing is blacklisted for a cooldown; below --min-np
the job says what is missing and ends at --elastic-timeout."""
import pathlib
import random
import re
import sys
import time

from conftest import BUILD_DIR, run
from elastic_replay import STEPS, close_to, committed, finals, replay

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}


def train(hvdrun, tmp_path, victim, kill_at, extra=(), how="kill",
          np=("-np", "3", "--min-np", "2", "--max-np", "3"), steps=STEPS, env=None, full=3):
    # full: the size the last step waits for (a replacement started late
    # still joins before the end); 0: the run ends at whatever size it has.
    marker = tmp_path / f"{how}-{victim}-{kill_at}"
    return run([hvdrun, *np, "--heartbeat-timeout-seconds", "2", *extra, sys.executable, WORKER,
                str(marker), str(victim), str(kill_at), str(steps), how, "0.1"], timeout=240,
               env={**ENV, "ELASTIC_FULL_SIZE": str(full), **(env or {})})


def check_run(r, ranks=3, steps=STEPS):
    assert r.returncode == 0, r.stdout + r.stderr
    got = finals(r.stdout)
    assert sorted(got) == list(range(ranks)), r.stdout  # back at full size
    assert all(v == got[0] for v in got.values()), got  # identical on every rank
    sizes = committed(r.stdout, steps)
    assert close_to(got[0], replay(sizes)), (got[0], sizes)
    return sizes


def test_killed_worker_is_replaced_and_training_matches(hvdrun, tmp_path):
    assert set(check_run(train(hvdrun, tmp_path, -1, 0)).values()) == {3}
    for victim in (1, 0):  # rank 0 too: the state comes from a survivor, not the replacement
        r = train(hvdrun, tmp_path, victim, 3)
        sizes = check_run(r)
        assert (f"hvdrun: rank {victim} on host localhost was killed by signal 9 (SIGKILL); "
                "started a replacement (reset 1 of 10)") in r.stderr, r.stderr
        # The survivors went on at 2 while the replacement started, then grew back to 3.
        assert sizes[3] == 3 and 2 in sizes.values() and sizes[STEPS - 1] == 3, sizes


FAKECUDA = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_plugin.so"
FAKECUDA_V3 = BUILD_DIR / "tests" / "plugins" / "libhvd_fake_cuda_v3_plugin.so"


def kill_in_device_op(hvdrun, tmp_path, plugin):
    """Every step runs a device allreduce on the GPU transport (fakecuda
    `plugin`); rank 1 dies inside the one of step 3 (fakecuda's hook: after
    the negotiation, before its contribution), the others wait in it. The
    reset ends their wait at once (not after the 30 s transport timeout),
    the survivors go on at 2, the replacement brings the job back to 3, and
    training ends equal."""
    start = time.monotonic()
    r = train(hvdrun, tmp_path, -1, 0,
              env={"ELASTIC_DEVICE_OPS": "1", "HVD_GPU_TRANSPORT": "fakecuda",
                   "HVD_TRANSPORT_PLUGINS": f"fakecuda:cuda:{plugin}",
                   "HVD_FAKECUDA_DIE_AT": "1:3", "HVD_LOG_LEVEL": "info",
                   "HVD_FAKECUDA_DIE_MARKER": str(tmp_path / "died-in-device-op")})
    took = time.monotonic() - start
    sizes = check_run(r)
    assert (tmp_path / "died-in-device-op").exists()
    assert "rank 1 on host localhost was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert 2 in sizes.values(), sizes
    assert took < 25, f"the reset waited for the transport timeout: {took:.1f} s"
    return r


def test_a_reset_shrinks_the_gpu_transport_to_the_survivors(hvdrun, tmp_path):
    # fakecuda can shrink like NCCL >= 2.27: the survivors shrink their
    # transport to the two of them in place (docs/gpu.md, "Elastic recovery:
    # shrink") and abort the old one; the round of two uses the shrunk one,
    # the round of three that the replacement joins connects anew.
    r = kill_in_device_op(hvdrun, tmp_path, FAKECUDA)
    # Both survivors shrank (old ranks 0 and 2 -> 0 and 1 of 2) ...
    for rank in (0, 1):
        assert f"shrank to the 2 survivors (rank {rank} of them) in place" in r.stderr, r.stderr
    # ... and the round of two ran its device ops on what they shrank to.
    assert "using the one shrunk in place in round 0 without rank(s) 1 (2 ranks)" in r.stderr, \
        r.stderr


def test_a_reset_without_shrink_aborts_device_collectives_and_rebuilds_the_gpu_transport(
        hvdrun, tmp_path):
    # A GPU transport that cannot shrink (fakecuda built for ABI version 3,
    # as a plugin older than NCCL 2.27's shrink) is aborted at the failure
    # or at the event, whichever comes first, and every round connects anew.
    r = kill_in_device_op(hvdrun, tmp_path, FAKECUDA_V3)
    assert "shrank to the" not in r.stderr, r.stderr
    assert "using the one shrunk" not in r.stderr, r.stderr


def test_a_member_lost_before_it_wrote_its_keys_does_not_stall_the_round(hvdrun, tmp_path):
    # Issue 27 item 4: slot 2 dies right after its Join of round 0 returned,
    # before its transport keys exist (HVD_TEST_FAULT, runtime/fault_point.h).
    # The others' key exchange ends at once (the rendezvous marks round 0
    # lost) and they join round 1 in place: no wait for the transport
    # timeout (60 s here), no failure of theirs, one reset only.
    start = time.monotonic()
    r = train(hvdrun, tmp_path, -1, 0,
              env={"HVD_TEST_FAULT": "joined:kill:round=0:slot=2",
                   "HVD_TRANSPORT_TIMEOUT_SECONDS": "60"})
    took = time.monotonic() - start
    check_run(r)
    assert "rank 2 on host localhost was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert "(reset 1 of 10)" in r.stderr and "reset 2 of" not in r.stderr, r.stderr
    assert "timed out" not in r.stderr, r.stderr
    assert took < 40, f"the survivors waited for the transport timeout: {took:.1f} s"


def test_a_member_hung_after_it_published_its_address_does_not_stall_the_round(hvdrun, tmp_path):
    # Slot 3 stops (SIGSTOP) right after its gloo transport published its
    # address for round 0, before it connected to anyone. It listens on
    # 127.0.0.2, so in each of its gloo pairs it is the side that connects
    # and the others wait for it: for 5x the transport timeout in gloo's own
    # connect (150 s here). Now the heartbeat verdict (2 s) marks round 0
    # lost, the membership watch ends their connect at once, and round 1
    # forms in place.
    start = time.monotonic()
    r = train(hvdrun, tmp_path, -1, 0, np=("-np", "4", "--min-np", "2", "--max-np", "4"), full=4,
              extra=("--elastic-timeout", "30"),
              env={"HVD_TEST_FAULT": "keys:stop:round=0:slot=3:key=cpu/3", "HVD_CPU_TRANSPORT": "gloo",
                   "ELASTIC_BIND": "3:127.0.0.2",
                   "HVD_TRANSPORT_TIMEOUT_SECONDS": "30"})
    took = time.monotonic() - start
    check_run(r, ranks=4)
    assert "rank 3 on host localhost stopped responding" in r.stderr, r.stderr
    assert "timed out" not in r.stderr, r.stderr
    assert took < 45, f"the survivors waited for the dead peer to connect: {took:.1f} s"


def test_a_second_fault_during_a_recovery(hvdrun, tmp_path):
    # Rank 1 is killed at step 3; slot 0, rejoining without it, dies right
    # after its Join of round 1 (before its keys exist): slot 2 joins round 2
    # and waits there (--min-np 2) for the replacements; training goes on
    # from slot 2's commit and ends equal on every rank.
    start = time.monotonic()
    r = train(hvdrun, tmp_path, 1, 3,
              env={"HVD_TEST_FAULT": "joined:kill:round=1:slot=0",
                   "HVD_TRANSPORT_TIMEOUT_SECONDS": "60"})
    took = time.monotonic() - start
    check_run(r)
    assert "rank 0 on host localhost was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert "rank 1 on host localhost was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert "timed out" not in r.stderr, r.stderr
    assert took < 60, f"a recovery waited for the transport timeout: {took:.1f} s"


def test_many_random_kills_over_one_run(hvdrun, tmp_path):
    # Five kill -9s at random ranks and steps (the seed is in the failure
    # message): each time the survivors go on and the replacement joins;
    # no committed step is lost and the parameters match the replay.
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    steps = sorted(rng.sample(range(2, STEPS - 4), 5))
    kills = ",".join(f"{rng.randrange(2)}:{s}" for s in steps)  # ranks 0, 1 always exist
    r = train(hvdrun, tmp_path, -1, 0, env={"ELASTIC_KILLS": kills})
    assert r.returncode == 0, f"seed {seed} kills {kills}\n{r.stderr}"
    check_run(r)
    assert r.stderr.count("was killed by signal 9 (SIGKILL); started a replacement") == 5, \
        f"seed {seed} kills {kills}\n{r.stderr}"


def test_stopped_worker_is_killed_and_replaced(hvdrun, tmp_path):
    # SIGSTOP: the worker's heartbeats stop; in an elastic job hvdrun kills
    # it and replaces it instead of ending the job.
    r = train(hvdrun, tmp_path, 2, 4, how="stop")
    check_run(r)
    assert ("hvdrun: rank 2 on host localhost stopped responding: no heartbeat for 2 s (its "
            "process is stopped, state T); killing it to replace it") in r.stderr, r.stderr
    assert "rank 2 on host localhost was killed by signal 9 (SIGKILL); started a replacement" \
        in r.stderr, r.stderr


def test_worker_that_raises_is_replaced(hvdrun, tmp_path):
    # An exception out of the training function ends that worker (exit 1),
    # not the job: it is replaced like a killed one.
    r = train(hvdrun, tmp_path, 1, 3, how="raise")
    check_run(r)
    assert "RuntimeError: rank 1 fails at step 3" in r.stderr, r.stderr
    assert ("hvdrun: rank 1 on host localhost exited with code 1; started a replacement "
            "(reset 1 of 10)") in r.stderr, r.stderr


def test_job_grows_to_max_np_when_slots_are_free(hvdrun, tmp_path):
    # -np 2 starts 2; once their first round formed the job fills the host's
    # third slot (up to --max-np) and training goes on at 3.
    r = train(hvdrun, tmp_path, -1, 0,
              np=("-np", "2", "--min-np", "2", "--max-np", "3", "-H", "localhost:3"))
    sizes = check_run(r)
    assert sizes[0] == 2 and sizes[STEPS - 1] == 3, sizes
    assert "hvdrun: started rank 2 on host localhost (the job grows to 3 workers)" in r.stderr, \
        r.stderr


def test_discovery_adds_and_removes_hosts(hvdrun, tmp_path):
    # 127.0.0.1 is this machine under another name: a host of its own for
    # the job. Rank 0 lists it after step 5 (the job grows to 3) and drops it
    # after 5 steps at 3 (its worker is stopped; the job shrinks to 2).
    hosts = tmp_path / "hosts"
    start, grow, shrink = "localhost:2\n", "localhost:2\n127.0.0.1:1\n", "# shrunk\nlocalhost:2\n"
    hosts.write_text(start)
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o700)
    steps = 60
    r = train(hvdrun, tmp_path, -1, 0, steps=steps, full=2,
              np=("-np", "2", "--min-np", "2", "--max-np", "3", "--host-discovery-script",
                  str(script), "--discovery-interval", "0.2"),
              env={"HOSTS_FILE": str(hosts), "HOSTS_START": start, "HOSTS_GROW": grow,
                   "HOSTS_SHRINK": shrink, "HOSTS_START_SIZE": "2"})
    sizes = check_run(r, ranks=2, steps=steps)
    assert hosts.read_text() == shrink
    assert 3 in sizes.values() and sizes[0] == 2 and sizes[steps - 1] == 2, sizes
    assert "hvdrun: host discovery: host 127.0.0.1 is listed with 1 slot(s)" in r.stderr, r.stderr
    assert "hvdrun: host discovery: host 127.0.0.1 is no longer listed" in r.stderr, r.stderr
    assert "hvdrun: stopping rank 2 (their hosts are no longer listed)" in r.stderr, r.stderr


def test_below_min_np_the_job_says_what_is_missing_and_times_out(hvdrun, tmp_path):
    # The script lists the host three times, then nothing: the workers are
    # stopped, progress lines name the missing host, and --elastic-timeout
    # ends the job (exit 124) naming it; no worker outlives it.
    count = tmp_path / "count"
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\nn=$(cat {count} 2>/dev/null || echo 0)\n"
                      f"echo $((n + 1)) > {count}\n"
                      "if [ $n -lt 3 ]; then echo localhost:2; fi\n")
    script.chmod(0o700)
    pids = tmp_path / "pids"
    r = run([hvdrun, "-np", "2", "--min-np", "2", "--host-discovery-script", str(script),
             "--discovery-interval", "0.2", "--elastic-timeout", "3", "sh", "-c",
             f"echo $$ >> {pids}; sleep 60"], timeout=60)
    assert r.returncode == 124, r.stderr
    assert re.search(r"hvdrun: waiting for [12] more workers? \(have [01] of min 2\): "
                     r"localhost missing \(not listed\)", r.stderr), r.stderr
    assert ("fewer workers than --min-np for 3 s (--elastic-timeout): have 0 of min 2; "
            "localhost missing (not listed)") in r.stderr, r.stderr
    for pid in pids.read_text().split():
        assert not pathlib.Path(f"/proc/{pid}").exists(), f"worker {pid} outlived the job"


def test_a_round_that_does_not_form_ends_the_job_at_the_elastic_timeout(hvdrun, tmp_path):
    # Rank 1 runs but never reaches hvd.init() (ELASTIC_INIT_DELAY): rank 0
    # waits in the first round. At --elastic-timeout hvdrun ends the job
    # (exit 124) naming the round and who it waits for, instead of rank 0's
    # Join failing later and the job replacing it.
    start = time.monotonic()
    r = run([hvdrun, "-np", "2", "--min-np", "1", "--max-np", "2", "--elastic-timeout", "4",
             sys.executable, WORKER, str(tmp_path / "m"), "-1", "0", "5", "kill", "0"],
            timeout=60, env={**ENV, "ELASTIC_INIT_DELAY": "1:120"})
    took = time.monotonic() - start
    assert r.returncode == 124, r.stdout + r.stderr
    assert ("hvdrun: error: rendezvous round 0 did not form within 4 s (--elastic-timeout): it "
            "waits for rank 1 on host localhost (joined: rank 0 on host localhost)") in r.stderr, \
        r.stderr
    assert took < 20, took


def test_a_host_whose_workers_keep_failing_is_blacklisted_for_a_cooldown(hvdrun, tmp_path):
    # Rank 1 fails three times in a row before it ever joins: its host is
    # blacklisted for 1 s (--blacklist-cooldown-range 1 2), then used again,
    # and the fourth worker in slot 1 succeeds; rank 0 finishes too.
    tries = tmp_path / "tries"
    worker = ('if [ "$HVD_RANK" = 1 ]; then echo x >> ' + str(tries) + '; '
              'if [ $(wc -l < ' + str(tries) + ') -le 3 ]; then exit 7; fi; echo slot1 done; '
              'else sleep 4; echo slot0 done; fi')
    r = run([hvdrun, "-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "1", "2",
             "sh", "-c", worker], timeout=25, env=ENV)
    assert r.returncode == 0, r.stderr
    assert tries.read_text().count("x") == 4, r.stderr
    assert ("hvdrun: host localhost is blacklisted for 1 s: 3 failed workers in a row"
            in r.stderr), r.stderr
    assert "slot1 done" in r.stdout and "slot0 done" in r.stdout, r.stdout


def test_reset_limit_ends_a_job_that_keeps_failing(hvdrun, tmp_path):
    r = run([hvdrun, "-np", "2", "--min-np", "1", "--reset-limit", "2", "sh", "-c",
             'if [ "$HVD_RANK" = 1 ]; then exit 7; fi; sleep 30'], timeout=60, env=ENV)
    assert r.returncode == 7, r.stderr
    assert r.stderr.count("started a replacement") == 2, r.stderr
    assert ("rank 1 on host localhost exited with code 7; the reset limit (2, --reset-limit) "
            "is used up") in r.stderr, r.stderr


def test_bad_elastic_flags_are_usage_errors(hvdrun):
    for args, message in ((["--min-np", "4"], "--min-np 4 is more than -np 2"),
                          (["--max-np", "1"], "--max-np 1 is less than -np 2"),
                          (["--min-np", "0"], "--min-np 0: need at least 1 process"),
                          (["--reset-limit", "3"], "--reset-limit needs an elastic job")):
        r = run([hvdrun, "-np", "2", *args, "true"], timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)


def discovery_script(tmp_path, lines, name="discover.sh"):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in lines))
    path.chmod(0o700)
    return str(path)


def test_host_discovery_script_gives_the_hosts(hvdrun, tmp_path):
    script = discovery_script(tmp_path, ["# the cluster", "localhost:3"])
    r = run([hvdrun, "--host-discovery-script", script, "sh", "-c", "echo $HVD_RANK/$HVD_SIZE"],
            timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(l for l in r.stdout.splitlines() if "<stdout>" in l) == \
        [f"[{i}]<stdout>:{i}/3" for i in range(3)]
    capped = run([hvdrun, "--host-discovery-script", script, "--max-np", "2", "sh", "-c",
                  "echo $HVD_SIZE"], timeout=60)
    assert capped.returncode == 0 and capped.stdout.count(":2") == 2, capped.stdout


def test_bad_discovery_output_is_a_usage_error_naming_the_line(hvdrun, tmp_path):
    script = discovery_script(tmp_path, ["localhost:2", "localhost:oops"], "bad.sh")
    r = run([hvdrun, "--host-discovery-script", script, "true"], timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"--host-discovery-script {script}: line 2 'localhost:oops'" in r.stderr, r.stderr
