"""Elastic jobs across the namespace hosts h1, h2, h3 (docs/elastic.md).

A host discovery script gives hvdrun the hosts; the workers train with
hvd.elastic.run (tests/integration/workers/elastic_train.py). When h2's agent
is killed the job goes on at the smaller size, and grows back once the agent
is up again and its blacklist cooldown is over; when discovery adds h3 the
job grows, when it drops h3 the job shrinks. In every run no committed step
is lost, and the final parameters are identical on every rank and equal a
replay of the committed steps at the sizes they ran at.
"""
import os
import pathlib
import re
import sys
import time

from conftest import BUILD_DIR, PYTHON, stray_processes

SOURCE = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE / "tests" / "integration"))
from elastic_replay import close_to, committed, finals, replay  # noqa: E402

WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")
COMMIT = re.compile(r"<stdout>:COMMIT (\d+) (\d+)$")


def sizes_seen(lines):
    return [int(m.group(2)) for line in lines if (m := COMMIT.search(line))]


def script_listing(tmp_path, hosts_file):
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts_file}\n")
    script.chmod(0o755)
    return str(script)


def start_training(hvdrun, secret, tmp_path, np, script, steps, env=None, pause="0.05"):
    return hvdrun.start(
        [*np, "--host-discovery-script", script, "--discovery-interval", "0.2",
         "--blacklist-cooldown-range", "1", "2", "--secret-file", secret,
         "-x", f"PYTHONPATH={BUILD_DIR / 'python'}", "-x", "OMP_NUM_THREADS=1",
         *[a for k, v in (env or {}).items() for a in ("-x", f"{k}={v}")],
         PYTHON, WORKER, str(tmp_path / "marker"), "-1", "0", str(steps), "kill", pause])


END_STEPS = 15  # steps run after end_soon(): more than the output lags behind


def end_soon(tmp_path, job, steps):
    """Ends the job END_STEPS after its last printed commit (at most at
    `steps`, its cap); the steps it runs."""
    end = max(int(m.group(1)) for line in job.lines() if (m := COMMIT.search(line))) + END_STEPS
    tmp = tmp_path / "end.tmp"
    tmp.write_text(str(end))
    os.replace(tmp, tmp_path / "end")
    return min(end, steps)


def check_training(r, ranks, steps):
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    got = finals(r.stdout)
    assert sorted(got) == list(range(ranks)), r.stdout
    assert all(v == got[0] for v in got.values()), got
    sizes = committed(r.stdout, steps)
    assert close_to(got[0], replay(sizes)), (got[0], sizes)
    return sizes


def test_lost_agent_shrinks_the_job_which_grows_back(cluster, plain_agents, hvdrun, secret,
                                                       tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:2\nh2:2\nh3:2\n")
    steps = 300
    job = start_training(hvdrun, secret, tmp_path, ["-np", "6", "--min-np", "2", "--max-np", "6"],
                         script_listing(tmp_path, hosts), steps,
                         env={"ELASTIC_END_FILE": tmp_path / "end"})
    job.wait_for(lambda lines: sizes_seen(lines).count(6) >= 5, timeout=120)
    plain_agents.kill(cluster.host("h2"))
    killed = time.monotonic()
    job.wait_for(lambda lines: 4 in sizes_seen(lines), timeout=30)
    shrunk = time.monotonic() - killed
    plain_agents.start(cluster.host("h2"))
    job.wait_for(lambda lines: sizes_seen(lines)[-1:] == [6] and 4 in sizes_seen(lines),
                 timeout=90)
    steps = end_soon(tmp_path, job, steps)
    r = job.wait(timeout=180)
    sizes = check_training(r, 6, steps)
    assert "lost the agent on host h2" in r.stderr, r.stderr
    assert shrunk < 15, f"the survivors took {shrunk:.1f} s to go on at 4"
    assert sizes[0] == 6 and 4 in sizes.values() and sizes[steps - 1] == 6, sizes
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"


def test_discovery_adds_and_removes_a_host(cluster, plain_agents, hvdrun, secret, tmp_path):
    hosts = tmp_path / "hosts"
    start, grow, shrink = "h1:2\nh2:2\n", "h1:2\nh2:2\nh3:2\n", "# shrunk\nh1:2\nh2:2\n"
    hosts.write_text(start)
    steps = 120
    job = start_training(hvdrun, secret, tmp_path, ["-np", "4", "--min-np", "2", "--max-np", "6"],
                         script_listing(tmp_path, hosts), steps,
                         env={"HOSTS_FILE": hosts, "HOSTS_START": start, "HOSTS_GROW": grow,
                              "HOSTS_SHRINK": shrink, "HOSTS_START_SIZE": "4"})
    r = job.wait(timeout=240)
    sizes = check_training(r, 4, steps)
    assert hosts.read_text() == shrink, r.stderr
    assert sizes[0] == 4 and 6 in sizes.values() and sizes[steps - 1] == 4, sizes
    assert "host discovery: host h3 is listed with 2 slot(s)" in r.stderr, r.stderr
    assert "host discovery: host h3 is no longer listed" in r.stderr, r.stderr
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"


def test_host_lost_during_the_first_round(cluster, plain_agents, hvdrun, secret, tmp_path):
    """Issue 27 item 1: h2's agent is lost while h1's workers wait in the
    first Join (h2's workers are held before hvd.init()): the first round
    forms without h2's slots and the job trains at 2 (it hung for good)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:2\nh2:2\n")
    steps = 40
    job = start_training(hvdrun, secret, tmp_path, ["-np", "4", "--min-np", "2", "--max-np", "4"],
                         script_listing(tmp_path, hosts), steps,
                         env={"ELASTIC_INIT_DELAY": "2,3:120"})
    # h1's workers are in hvd.init() (their Join waits for slots 2 and 3).
    time.sleep(4)
    assert job.proc.poll() is None, job.text()
    hosts.write_text("h1:2\n")
    plain_agents.kill(cluster.host("h2"))
    r = job.wait(timeout=90)
    sizes = check_training(r, 2, steps)
    assert set(sizes.values()) == {2}, sizes
    assert "lost the agent on host h2" in r.stderr, r.stderr
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"
