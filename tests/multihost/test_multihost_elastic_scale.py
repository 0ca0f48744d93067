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

The step counts are caps: once the last phase is seen, each test ends its
job a few steps later (ELASTIC_END_FILE, as the chaos test does) instead of
running the rest at full size.
"""
import os
import signal
import time

from conftest import stray_processes
from test_multihost_elastic import (check_training, end_soon, script_listing, sizes_seen,
                                    start_training)


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
                         env={"ELASTIC_FULL_SIZE": "8", "ELASTIC_END_FILE": tmp_path / "end"})
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
    steps = end_soon(tmp_path, job, steps)
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
                         env={"ELASTIC_FULL_SIZE": "16", "ELASTIC_END_FILE": tmp_path / "end"})
    job.wait_for(lambda lines: sizes_seen(lines).count(16) >= 5, timeout=240)
    os.kill(workers_on(cluster, "h4")[0], signal.SIGKILL)
    killed = time.monotonic()
    job.wait_for(lambda lines: 15 in sizes_seen(lines), timeout=60)
    shrunk = time.monotonic() - killed
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [16] and 15 in sizes_seen(lines),
                 timeout=120)
    steps = end_soon(tmp_path, job, steps)
    r = job.wait(timeout=300)
    sizes = check_training(r, 16, steps)
    assert "was killed by signal 9 (SIGKILL); started a replacement" in r.stderr, r.stderr
    assert shrunk < 20, f"the survivors took {shrunk:.1f} s to go on at 15"
    assert sizes[steps - 1] == 16, sizes
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"


def spare_pids(spares_dir):
    """Pids of the spares that wrote their file (elastic_train.py), by id."""
    files = sorted((f for f in os.listdir(spares_dir) if f.startswith("spare.")),
                   key=lambda f: int(f.split(".")[1]))
    return [int((spares_dir / f).read_text()) for f in files]


def test_hot_spares_on_other_hosts_take_a_killed_workers_slot(cluster, plain_agents, hvdrun,
                                                               secret, tmp_path):
    # 8 workers (3 on h1 and h2, 2 on h3; h4's 2 slots free) and 2 hot
    # spares, on h4 and h1 (the most free slots first; agents in other
    # namespaces). A spare killed before its promotion is started again;
    # then a worker on h3 is killed: the spare on h4 (a host with a free
    # slot) takes its slot and the job never runs below 8.
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:3\nh2:3\nh3:2\nh4:2\n")
    spares_dir = tmp_path / "spares"
    spares_dir.mkdir()
    steps = 600
    job = start_training(hvdrun, secret, tmp_path,
                         ["-np", "8", "--min-np", "2", "--max-np", "8", "--spares", "2"],
                         script_listing(tmp_path, hosts), steps, pause="0.01",
                         env={"ELASTIC_FULL_SIZE": "8", "ELASTIC_SPARES_DIR": str(spares_dir),
                              "ELASTIC_END_FILE": tmp_path / "end"})
    job.wait_for(lambda lines: sizes_seen(lines).count(8) >= 5, timeout=180)
    deadline = time.monotonic() + 60
    while len(spare_pids(spares_dir)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    first = spare_pids(spares_dir)[0]
    os.kill(first, signal.SIGKILL)
    os.rename(spares_dir / "spare.8", spares_dir / "killed.8")
    deadline = time.monotonic() + 60
    while len(spare_pids(spares_dir)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(spare_pids(spares_dir)) == 2, "no spare was started in place of the killed one"
    time.sleep(1.0)  # the new spare reaches hvd.init()

    victim = workers_on(cluster, "h3")[0]
    seen = len(sizes_seen(job.lines()))
    os.kill(victim, signal.SIGKILL)
    job.wait_for(lambda lines: len(sizes_seen(lines)) >= seen + 40, timeout=60)
    after = sizes_seen(job.lines())[seen:]
    steps = end_soon(tmp_path, job, steps)
    r = job.wait(timeout=300)
    sizes = check_training(r, 8, steps)
    assert "started hot spares 8, 9 on hosts h4, h1" in r.stderr, r.stderr
    assert ("hot spare 8 on host h4 was killed by signal 9 (SIGKILL) before it was promoted"
            in r.stderr), r.stderr
    assert "started hot spare 10 on host h4" in r.stderr, r.stderr
    assert "on host h3 was killed by signal 9 (SIGKILL); promoted spare 10 on host h4" in r.stderr, \
        r.stderr
    assert set(after) == {8}, f"the job ran below 8 after the kill: {after}"
    assert set(sizes.values()) == {8}, sizes
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"
