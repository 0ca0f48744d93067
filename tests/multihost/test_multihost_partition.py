"""A host cut off from hvdrun by a network partition: every packet between
hvdrun's namespace (the root, 10.77.0.1) and host h2 is dropped (iptables DROP
in h2's namespace: no RST, no FIN reaches either side). hvdrun fails the job
when h2's ranks stop sending heartbeats; h2's agent must end the job's
workers within about the job's heartbeat timeout of the cut as well (hvdrun
sends the timeout in Launch as the job's orphan grace, and the agent's HTTP/2
keepalive notices the silent Watch stream within about 3 s; docs/agent.md).
The agents run with --orphan-grace 5 (conftest.py).
"""
import shutil
import subprocess
import time

import pytest

from conftest import HOSTS, executable, stray_processes

HEARTBEAT_S = 3
# Keepalive (about 3 s) and SIGTERM delivery on top of the heartbeat timeout.
ALLOWANCE_S = 5


def _iptables(cluster, host, action):
    """Adds (-I) or deletes (-D) the rules that drop h2 <-> hvdrun traffic in host's namespace."""
    peer = cluster.bridge_address
    for rule in (["INPUT", "-s", peer, "-j", "DROP"], ["OUTPUT", "-d", peer, "-j", "DROP"]):
        r = subprocess.run(cluster.exec_args(host, ["iptables", action, *rule]),
                           capture_output=True, text=True, timeout=20)
        if action == "-I":
            assert r.returncode == 0, f"iptables {action} {rule}: {r.stderr.strip()}"


def _workers(cluster, agents, host):
    keep = agents.pids()
    return [pid for pid in cluster.pids(host) if pid not in keep]


def test_partitioned_host_ends_its_workers_within_the_heartbeat_timeout(
        cluster, plain_agents, hvdrun, secret):
    if shutil.which("iptables") is None:
        pytest.skip("needs iptables to partition a namespace host from hvdrun")
    h2 = cluster.host("h2")
    job = hvdrun.start(["-H", HOSTS, "--secret-file", secret,
                        "--heartbeat-timeout-seconds", str(HEARTBEAT_S),
                        executable("init_stamp"), "--sleep", "120"])
    job.wait_for(lambda lines: sum("t_init_ns" in line for line in lines) == 6, timeout=60)
    assert _workers(cluster, plain_agents, h2), cluster.describe(cluster.pids(h2))

    cut = time.monotonic()
    _iptables(cluster, h2, "-I")
    try:
        gone_after = None
        deadline = cut + HEARTBEAT_S + 40
        while time.monotonic() < deadline:
            if not _workers(cluster, plain_agents, h2):
                gone_after = time.monotonic() - cut
                break
            time.sleep(0.1)
        r = job.wait(timeout=max(5, deadline - time.monotonic()) + 30)
    finally:
        _iptables(cluster, h2, "-D")

    print(f"h2's workers were gone {gone_after} s after the cut "
          f"(heartbeat timeout {HEARTBEAT_S} s); hvdrun exited {r.returncode}")
    agent = plain_agents["h2"]
    assert r.returncode != 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert gone_after is not None, \
        f"h2's workers outlived the cut by 40 s; agent log:\n{agent.log()}"
    assert gone_after < HEARTBEAT_S + ALLOWANCE_S, \
        f"h2's workers were gone only {gone_after:.1f} s after the cut; agent log:\n{agent.log()}"
    assert "launcher gone for" in agent.log(), agent.log()
    assert agent.alive(), agent.log()
    left = stray_processes(cluster, plain_agents, 10)
    assert not left, f"processes left in the namespaces: {left}"
