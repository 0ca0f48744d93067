"""Elastic jobs at scale across the namespace hosts h1..h4 (issue 18 part 4):
8 and 16 tiny workers (tests/integration/workers/elastic_train.py, one
thread each) on 2 cores.

- 8 workers (2 per host): a host is lost while a second failure (a worker
  killed on another host) is being handled; later every host but one is
  lost at once; the job goes on each time with the workers left (never
  below --min-np 2) and grows back to 8 when the agents return.
- 16 workers (4 per host): a worker killed with SIGKILL is replaced and the
  job is back at 16.

Every run ends with identical parameters on every rank, equal to a replay of
the committed steps at the sizes they ran at, and no process is left in the
namespaces.
"""
import os
import signal
import time

from conftest import stray_processes
from test_multihost_elastic import check_training, script_listing, sizes_seen, start_training


def workers_on(cluster, host):
    """Pids of the training workers in `host`'s namespace."""
    return [pid for pid in cluster.pids(cluster.host(host))
            if "elastic_train.py" in cluster.describe([pid])[0]]


def test_eight_workers_survive_two_failures_at_once_and_all_hosts_but_one_lost(
        cluster, plain_agents, hvdrun, secret, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:2\nh2:2\nh3:2\nh4:2\n")
    steps = 1500  # enough for every phase below; the last waits for the full size
    job = start_training(hvdrun, secret, tmp_path, ["-np", "8", "--min-np", "2", "--max-np", "8"],
                         script_listing(tmp_path, hosts), steps, pause="0.01",
                         env={"ELASTIC_FULL_SIZE": "8"})
    job.wait_for(lambda lines: sizes_seen(lines).count(8) >= 5, timeout=180)

    # A host lost while a second failure is handled: h2's agent and a worker
    # on h3, together. The survivors go on without both (at most 5 left: h1,
    # h4 and h3's other worker), the killed worker is replaced on h3.
    victim = workers_on(cluster, "h3")[0]
    plain_agents.kill(cluster.host("h2"))
    os.kill(victim, signal.SIGKILL)
    lost = time.monotonic()
    job.wait_for(lambda lines: any(s <= 5 for s in sizes_seen(lines)), timeout=60)
    first = time.monotonic() - lost
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [6], timeout=90)  # h3 whole again

    # Every host but one lost at once: h1 goes on alone (2 workers, --min-np).
    for host in ("h3", "h4"):
        plain_agents.kill(cluster.host(host))
    lost = time.monotonic()
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [2], timeout=60)
    second = time.monotonic() - lost

    # The agents come back: the job grows back to 8.
    for host in ("h2", "h3", "h4"):
        plain_agents.start(cluster.host(host))
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [8], timeout=120)
    r = job.wait(timeout=300)
    sizes = check_training(r, 8, steps)
    assert "lost the agent on host h2" in r.stderr, r.stderr
    assert "was killed by signal 9 (SIGKILL)" in r.stderr, r.stderr
    assert 2 in sizes.values() and sizes[steps - 1] == 8, sizes
    assert first < 20 and second < 20, (first, second)
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"


def test_sixteen_workers_replace_a_killed_one(cluster, plain_agents, hvdrun, secret, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:4\nh2:4\nh3:4\nh4:4\n")
    steps = 300
    job = start_training(hvdrun, secret, tmp_path,
                         ["-np", "16", "--min-np", "8", "--max-np", "16"],
                         script_listing(tmp_path, hosts), steps, pause="0.01",
                         env={"ELASTIC_FULL_SIZE": "16"})
    job.wait_for(lambda lines: sizes_seen(lines).count(16) >= 5, timeout=240)
    os.kill(workers_on(cluster, "h4")[0], signal.SIGKILL)
    killed = time.monotonic()
    job.wait_for(lambda lines: 15 in sizes_seen(lines), timeout=60)
    shrunk = time.monotonic() - killed
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [16] and 15 in sizes_seen(lines),
                 timeout=120)
    r = job.wait(timeout=300)
    sizes = check_training(r, 16, steps)
    assert "was killed by signal 9 (SIGKILL); started a replacement" in r.stderr, r.stderr
    assert shrunk < 20, f"the survivors took {shrunk:.1f} s to go on at 15"
    assert sizes[steps - 1] == 16, sizes
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"
