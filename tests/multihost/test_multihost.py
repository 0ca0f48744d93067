"""hvdrun across three "hosts": network namespaces h1, h2, h3, one hvd-agent each.

hvdrun runs in the root namespace (the launcher machine, 10.77.0.1); the
agents listen on 10.77.0.1X:29470 with a shared secret and --orphan-grace 5.
Ranks are host-major: with -H h1:2,h2:2,h3:2 ranks 0,1 are on h1, 2,3 on h2
and 4,5 on h3.
"""
import os
import re
import signal
import time

from conftest import (BUILD_DIR, HOSTS, PYTHON, executable, stray_processes, worker_lines)

STAMP = re.compile(r"init_stamp: rank (\d+) size (\d+) local (\d+)/(\d+) cross (\d+)/(\d+) "
                   r"host (\S+) bind (\S+) pid (\d+) t_init_ns (\d+)")


def stamps(lines):
    """{rank: match} of init_stamp's after-init lines (in prefixed hvdrun output)."""
    found = {}
    for line in lines:
        m = STAMP.search(line)
        if m:
            found[int(m.group(1))] = m
    return found


def expected_placement(rank):
    """(host, local rank, cross rank) of `rank` under -H h1:2,h2:2,h3:2."""
    return f"h{rank // 2 + 1}", rank % 2, rank // 2


def assert_clean(cluster, agents, timeout=10):
    left = stray_processes(cluster, agents, timeout)
    assert not left, f"processes left in the namespaces after {timeout} s: {left}"


# ---- a. a job across the hosts -------------------------------------------------

def test_collectives_check_on_three_hosts(plain_agents, hvdrun, secret):
    r = hvdrun(["-np", "6", "-H", HOSTS, "--secret-file", secret,
                executable("collectives_check")], timeout=120)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    for rank in range(6):
        assert f"collectives_check: rank {rank} of 6 OK" in lines.get(rank, []), r.stdout


def test_every_op_on_three_hosts_with_each_cpu_transport(plain_agents, hvdrun, secret):
    # auto picks hierarchical here (three hosts of two ranks: shm inside each
    # host, gloo across); hierarchical and gloo forced give the same results.
    for transport, picked in (("auto", "hierarchical"), ("hierarchical", "hierarchical"),
                              ("gloo", "gloo")):
        r = hvdrun(["-np", "6", "-H", HOSTS, "--secret-file", secret, "-x",
                    f"HVD_CPU_TRANSPORT={transport}", "--log-level", "info",
                    executable("ops_check")], timeout=180)
        assert r.returncode == 0, f"{transport}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        lines = worker_lines(r.stdout)
        for rank in range(6):
            assert f"ops_check: rank {rank} of 6 OK" in lines.get(rank, []), r.stdout
        assert f"cpu transport {picked}" in r.stderr, (transport, r.stderr)


def test_ranks_are_host_major_with_bind_addresses(cluster, plain_agents, hvdrun, secret):
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, executable("init_stamp")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    lines = worker_lines(r.stdout)
    assert sorted(lines) == list(range(6)), r.stdout
    for rank in range(6):
        host, local, cross = expected_placement(rank)
        got = stamps(lines[rank])
        assert rank in got, f"rank {rank}: {lines[rank]}"
        m = got[rank]
        assert (m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)) == \
            ("6", str(local), "2", str(cross), "3"), m.group(0)
        assert m.group(7) == host, m.group(0)
        assert m.group(8) == cluster.host(host).address, m.group(0)
        assert f"init_stamp: rank {rank} sum OK" in lines[rank]


def test_network_interface_is_chosen_per_host(cluster, plain_agents, hvdrun, secret):
    # The first listed interface a host has wins: every namespace has eth0 only.
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, "--network-interface", "nosuch0,eth0",
                executable("init_stamp")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    got = {}
    for lines in worker_lines(r.stdout).values():
        got.update(stamps(lines))
    assert sorted(got) == list(range(6)), r.stdout
    for rank, m in got.items():
        assert m.group(8) == cluster.host(expected_placement(rank)[0]).address, m.group(0)

    # No host has the interface: a usage error naming a host and the name, nothing started.
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, "--network-interface", "nosuch0",
                "sh", "-c", "echo should not run"], timeout=60)
    assert r.returncode == 2, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "should not run" not in r.stdout
    assert re.search(r"host h[123]\b.*nosuch0", r.stderr), r.stderr


def test_python_workers_see_their_hosts(cluster, plain_agents, hvdrun, secret):
    script = ("import os, sys, hvd\n"
              "hvd.init()\n"
              "e = os.environ\n"
              "print(hvd.rank(), hvd.size(), hvd.local_rank(), hvd.cross_rank(), e['HVD_RANK'],"
              " e['HVD_LOCAL_RANK'], e['HVD_CROSS_RANK'], e['HVD_HOSTNAME'],"
              " e['HVD_BIND_ADDRESS'], flush=True)\n"
              "print('to stderr', hvd.rank(), file=sys.stderr, flush=True)\n"
              "hvd.shutdown()\n")
    r = hvdrun(["-np", "6", "-H", HOSTS, "--secret-file", secret,
                "-x", f"PYTHONPATH={BUILD_DIR / 'python'}", PYTHON, "-c", script], timeout=90)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    out = worker_lines(r.stdout)
    err = worker_lines(r.stderr, "stderr")
    for rank in range(6):
        host, local, cross = expected_placement(rank)
        want = f"{rank} 6 {local} {cross} {rank} {local} {cross} {host} " \
               f"{cluster.host(host).address}"
        assert out.get(rank) == [want], r.stdout
        assert f"to stderr {rank}" in err.get(rank, []), r.stderr


# ---- b. credentials ------------------------------------------------------------

def _forged_secret(cluster):
    path = cluster.workdir / "forged-secret"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    return str(path)


def test_forged_secret_is_refused_by_every_agent(cluster, plain_agents, hvdrun):
    forged = _forged_secret(cluster)
    before = {h.name: len(plain_agents[h.name].log()) for h in cluster.hosts}
    for h in cluster.hosts:
        r = hvdrun(["-np", "1", "-H", f"{h.name}:1", "--secret-file", forged, "--start-timeout",
                    "10", "sh", "-c", "echo should not run"], timeout=30)
        assert r.returncode == 1, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        assert "should not run" not in r.stdout
        assert re.search(rf"the agent on host {h.name}\b.*refused", r.stderr), r.stderr
    r = hvdrun(["-H", HOSTS, "--secret-file", forged, "--start-timeout", "10",
                "sh", "-c", "echo should not run"], timeout=30)
    assert r.returncode == 1 and re.search(r"host h[123]\b.*refused", r.stderr), r.stderr
    assert "should not run" not in r.stdout
    for h in cluster.hosts:
        agent = plain_agents[h.name]
        assert agent.alive(), f"agent on {h.name} died:\n{agent.log()}"
        new = agent.log()[before[h.name]:]
        assert re.search(r"refused", new, re.IGNORECASE), f"{h.name} log:\n{new}"
    assert_clean(cluster, plain_agents, timeout=2)


def test_missing_secret_is_an_error(cluster, plain_agents, hvdrun):
    r = hvdrun(["-H", HOSTS, "sh", "-c", "echo should not run"], timeout=30)
    assert r.returncode == 2, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "should not run" not in r.stdout
    assert "--secret-file" in r.stderr and re.search(r"\bh[123]\b", r.stderr), r.stderr
    missing = cluster.workdir / "no-such-secret"
    r = hvdrun(["-H", HOSTS, "--secret-file", missing, "sh", "-c", "echo should not run"],
               timeout=30)
    assert r.returncode != 0 and str(missing) in r.stderr, r.stderr
    assert_clean(cluster, plain_agents, timeout=2)


# ---- c. TLS --------------------------------------------------------------------

def test_mutual_tls(cluster, agents, hvdrun, secret, tls):
    agents.ensure(tls=True)
    cert, key = tls["client"]
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, "--tls-cert", cert, "--tls-key", key,
                "--tls-ca", tls["ca"], executable("init_stamp")], timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert sorted(stamps(r.stdout.splitlines())) == list(range(6)), r.stdout

    start = time.monotonic()
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, "--start-timeout", "5",
                "sh", "-c", "echo should not run"], timeout=40)
    assert r.returncode != 0, r.stdout
    assert "should not run" not in r.stdout
    assert re.search(r"host h[123]\b", r.stderr), r.stderr
    assert "TLS mismatch" in r.stderr, r.stderr
    assert time.monotonic() - start < 15, f"took {time.monotonic() - start:.1f} s"

    # A client certificate the agents' CA did not sign: the handshake fails.
    cert, key = tls["rogue"]
    r = hvdrun(["-H", "h2:1", "--secret-file", secret, "--tls-cert", cert, "--tls-key", key,
                "--tls-ca", tls["ca"], "--start-timeout", "5", "sh", "-c", "echo should not run"],
               timeout=40)
    assert r.returncode != 0 and re.search(r"host h2\b", r.stderr), r.stderr
    assert "TLS mismatch" in r.stderr, r.stderr
    assert "should not run" not in r.stdout
    assert r.duration < 15, f"took {r.duration:.1f} s"
    for h in cluster.hosts:
        assert agents[h.name].alive(), agents[h.name].log()
    assert_clean(cluster, agents, timeout=5)


# ---- d. an agent dies mid-job -----------------------------------------------------

def test_lost_agent_ends_the_job(cluster, plain_agents, hvdrun, secret):
    job = hvdrun.start(["-H", HOSTS, "--secret-file", secret,
                        executable("init_stamp"), "--sleep", "120"])
    job.wait_for(lambda lines: len(stamps(lines)) == 6, timeout=60)
    killed = time.monotonic()
    plain_agents.kill(cluster.host("h2"))
    r = job.wait(timeout=30)
    took = time.monotonic() - killed
    assert r.returncode == 1, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "lost the agent on host h2" in r.stderr, r.stderr
    assert took < 12, f"hvdrun took {took:.1f} s to notice"
    assert_clean(cluster, plain_agents, timeout=10)


def test_stopped_worker_on_a_remote_host_is_named(cluster, plain_agents, hvdrun, secret):
    # Rank 3 (on h2) stops itself: its heartbeats to hvdrun (across the
    # namespaces) stop, and hvdrun names it instead of waiting for a peer's
    # 30 s transport timeout.
    script = ("import os, signal, time, numpy as np, hvd.numpy as hnp\n"
              "hnp.init()\n"
              "hnp.allreduce(np.ones(1), name='start')\n"
              "if hnp.rank() == 3:\n"
              "    os.kill(os.getpid(), signal.SIGSTOP)\n"
              "for i in range(600):\n"
              "    hnp.allreduce(np.ones(1), name='step%d' % i)\n"
              "    time.sleep(0.1)\n")
    start = time.monotonic()
    r = hvdrun(["-np", "6", "-H", HOSTS, "--secret-file", secret,
                "-x", f"PYTHONPATH={BUILD_DIR / 'python'}", PYTHON, "-c", script], timeout=90)
    took = time.monotonic() - start
    assert r.returncode == 125, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "rank 3 on host h2 stopped responding: no heartbeat for 5 s" in r.stderr, r.stderr
    assert took < 40, f"took {took:.1f} s"
    assert_clean(cluster, plain_agents, timeout=10)


# ---- e. an agent that is down at start ---------------------------------------------

def test_unreachable_host_fails_the_start(cluster, plain_agents, hvdrun, secret):
    plain_agents.stop(cluster.host("h3"))
    r = hvdrun(["-H", HOSTS, "--secret-file", secret, "--start-timeout", "5",
                executable("init_stamp")], timeout=40)
    assert r.returncode == 1, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "cannot reach the agent on host h3" in r.stderr, r.stderr
    assert "t_init_ns" not in r.stdout
    assert r.duration < 12, f"took {r.duration:.1f} s"
    assert_clean(cluster, plain_agents, timeout=10)


# ---- f. Ctrl-C -------------------------------------------------------------------

def test_sigint_ends_the_job_everywhere(cluster, plain_agents, hvdrun, secret):
    job = hvdrun.start(["-H", HOSTS, "--secret-file", secret,
                        executable("init_stamp"), "--sleep", "120"])
    job.wait_for(lambda lines: len(stamps(lines)) == 6, timeout=60)
    os.kill(job.proc.pid, signal.SIGINT)
    r = job.wait(timeout=30)
    assert r.returncode == 130, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.duration < 60
    assert_clean(cluster, plain_agents, timeout=10)


# ---- g. the launcher vanishes ------------------------------------------------------

def test_killed_launcher_leaves_no_orphans(cluster, plain_agents, hvdrun, secret):
    job = hvdrun.start(["-H", HOSTS, "--secret-file", secret,
                        executable("init_stamp"), "--sleep", "120"])
    job.wait_for(lambda lines: len(stamps(lines)) == 6, timeout=60)
    job.kill()  # SIGKILL: no Terminate reaches the agents; --orphan-grace 5 must
    assert_clean(cluster, plain_agents, timeout=15)
    for h in cluster.hosts:
        assert plain_agents[h.name].alive(), plain_agents[h.name].log()


# ---- h. hvdrun --ssh: job-scoped agents, no daemons ---------------------------------

FAKE_SSH = """#!/bin/sh
# An ssh stand-in: [-o OPT] [-p PORT] HOST COMMAND... runs COMMAND in HOST's namespace.
printf '%s\\n' "$*" >> "{log}"
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p) shift 2 ;;
    *) break ;;
  esac
done
host=$1
shift
exec ip netns exec "{prefix}-$host" "$@"
"""


def _fake_ssh(cluster, tmp_path):
    log = tmp_path / "ssh-argv.log"
    script = tmp_path / "fake_ssh"
    prefix = cluster.hosts[0].netns[:-len(cluster.hosts[0].name) - 1]
    script.write_text(FAKE_SSH.format(log=log, prefix=prefix))
    script.chmod(0o755)
    return str(script), log


def test_ssh_starts_job_scoped_agents(cluster, agents, hvdrun, tmp_path):
    agents.stop_all()  # no daemons: --ssh starts its own agents
    fake_ssh, log = _fake_ssh(cluster, tmp_path)
    ssh = ["--ssh", "--ssh-command", fake_ssh, "--ssh-agent-path", executable("hvd-agent")]
    r = hvdrun(["-H", HOSTS, *ssh, executable("init_stamp")], timeout=90)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "agent on host" not in r.stderr, r.stderr  # the agents had nothing to say
    lines = worker_lines(r.stdout)
    assert sorted(lines) == list(range(6)), r.stdout
    for rank in range(6):
        host, local, cross = expected_placement(rank)
        m = stamps(lines[rank]).get(rank)
        assert m is not None, f"rank {rank}: {lines[rank]}"
        assert (m.group(2), m.group(3), m.group(5), m.group(7)) == \
            ("6", str(local), str(cross), host), m.group(0)
    # One ssh per host; the secret went over stdin, never argv.
    argvs = log.read_text().splitlines()
    assert sorted(a.split()[2] for a in argvs) == ["h1", "h2", "h3"], argvs
    for a in argvs:
        assert "-o BatchMode=yes" in a and "--secret-stdin --exit-on-stdin-eof" in a, a
        assert not re.search(r"\b[0-9a-f]{64}\b", a), a
    # The job-scoped agents ended with hvdrun: nothing is left in any namespace.
    assert_clean(cluster, agents, timeout=10)

    # hvdrun killed mid-job: its ssh processes die with it, and so does everything remote.
    job = hvdrun.start(["-H", HOSTS, *ssh, executable("init_stamp"), "--sleep", "120"])
    job.wait_for(lambda lines: len(stamps(lines)) == 6, timeout=60)
    job.kill()
    assert_clean(cluster, agents, timeout=10)

    # An agent that cannot start: exit 1 naming the host, within seconds.
    r = hvdrun(["-H", HOSTS, "--ssh", "--ssh-command", fake_ssh, "--ssh-agent-path",
                "/nonexistent/hvd-agent", "sh", "-c", "echo should not run"], timeout=40)
    assert r.returncode == 1, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert re.search(r"cannot start the agent on host h[123] over ssh: .*nonexistent",
                     r.stderr), r.stderr
    assert "should not run" not in r.stdout
    assert r.duration < 15, f"took {r.duration:.1f} s"
    assert_clean(cluster, agents, timeout=10)
