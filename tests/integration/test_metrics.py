"""hvdrun --metrics-port (docs/metrics.md): /metrics in Prometheus' text
format with the job's size and each rank's op counters (carried on the
heartbeat), /state.json for the live page, the page itself at /; bound to
127.0.0.1; bad requests get an error status, not a hang; a port in use is a
usage error naming it; no token in any page. hvd-agent --metrics-port serves
the agent's counters."""
import re
import socket

import os
import signal

from conftest import Background, executable
from metrics_job import ELASTIC_WORKER, free_port, get, start_job, state, wait_until


def ops_total(text, rank, op="allreduce"):
    m = re.search(r'^hvd_rank_ops_total\{rank="%d",host="[^"]*",op="%s",process_set="0"\} (\d+)$'
                  % (rank, op), text, re.M)
    return int(m.group(1)) if m else None


def test_metrics_state_and_page_of_a_running_job(hvdrun, tmp_path):
    port = free_port()
    end = tmp_path / "end"
    job = start_job(hvdrun, port, end)
    try:
        wait_until(lambda: [r.get("ops", 0) > 0 for r in state(port)["ranks"]] == [True, True],
                   30, "both ranks reported ops", job)
        status, text = get(port, "/metrics")
        assert status == 200
        assert "# TYPE hvd_rank_ops_total counter" in text
        assert re.search(r"^hvd_job_size_ranks 2$", text, re.M), text
        assert 'hvd_rank_state{rank="1",host="localhost",state="running"} 1' in text
        assert 'hvd_host_ranks_alive{host="localhost"} 2' in text
        assert "hvd_rank_allreduce_latency_seconds_bucket" in text
        first = ops_total(text, 0)
        assert first and ops_total(text, 0, "broadcast"), text
        wait_until(lambda: (ops_total(get(port, "/metrics")[1], 0) or 0) > first, 10,
                   "the op count grew")
        s = state(port)
        assert [r["state"] for r in s["ranks"]] == ["running", "running"], s
        status, page = get(port, "/")
        assert status == 200 and "state.json" in page and "<canvas" in page
        assert get(port, "/nothing")[0] == 404
        # Not a GET; a garbage request; a head that never ends: refused, not hung.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"POST /metrics HTTP/1.1\r\n\r\n")
            assert c.recv(100).startswith(b"HTTP/1.1 405")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"\x00\x01garbage\r\n\r\n")
            assert c.recv(100).startswith(b"HTTP/1.1 400")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"GET /" + b"a" * 9000)
            assert c.recv(100).startswith(b"HTTP/1.1 431")
        # Loopback only by default.
        host_ip = socket.gethostbyname(socket.gethostname())
        if not host_ip.startswith("127."):
            with socket.socket() as c:
                c.settimeout(2)
                assert c.connect_ex((host_ip, port)) != 0
        for page in ("/metrics", "/state.json"):
            body = get(port, page)[1]
            assert "token" not in body.lower() and "secret" not in body.lower()
        end.touch()
        assert job.wait(60) == 0, "\n".join(job.stderr)
    finally:
        job.close()


def test_a_waiting_spare_and_its_promotion_are_shown(hvdrun, tmp_path):
    port = free_port()
    end = tmp_path / "end"
    spares = tmp_path / "spares"
    spares.mkdir()
    job = start_job(hvdrun, port, end, extra=["--min-np", "1", "--max-np", "2", "--spares", "1"],
                    worker_args=[ELASTIC_WORKER, str(tmp_path / "marker"), "-1", "0", "600",
                                 "kill", "0.05"],
                    env={"ELASTIC_FULL_SIZE": "0", "ELASTIC_END_FILE": str(end),
                         "ELASTIC_SPARES_DIR": str(spares)})
    try:
        def spare_waits():
            s = state(port)
            return (len(s["spares_waiting"]) == 1 and
                    [r["state"] for r in s["ranks"]] == ["running", "running", "spare"])
        wait_until(spare_waits, 60, "two ranks running and a spare waiting", job)
        assert re.search(r"^hvd_spares_waiting 1$", get(port, "/metrics")[1], re.M)
        pid = wait_until(lambda: worker_of(1, tmp_path), 10, "the worker of rank 1")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: re.search(r"^hvd_spares_promoted_total 1$", get(port, "/metrics")[1],
                                     re.M), 30, "the spare's promotion counted")
        s = state(port)
        assert any("promoted" in e["text"] for e in s["events"]), s["events"]
        assert s["spares_promoted"] == 1
        end.write_text("1")
        assert job.wait(90) == 0, "\n".join(job.stderr[-30:])
    finally:
        job.close()


def worker_of(slot, tmp_path):
    """The pid of the worker in `slot` whose ELASTIC_END_FILE is under tmp_path."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if (f"ELASTIC_END_FILE={tmp_path / 'end'}".encode() in env and
                f"HVD_RANK={slot}".encode() in env):
            return int(entry)
    return None


def test_a_metrics_port_in_use_is_a_usage_error(hvdrun, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        job = start_job(hvdrun, port, tmp_path / "end")
        try:
            code = job.wait(60)
        finally:
            job.close()
        assert code == 2, "\n".join(job.stderr)
        assert any(f"--metrics-port: cannot listen on 127.0.0.1:{port}" in line
                   for line in job.stderr), job.stderr


def test_hvd_agent_serves_its_metrics(tmp_path):
    agent = executable("hvd-agent")
    secret = tmp_path / "secret"
    secret.write_text("a-secret-of-the-agent-test-0123\n")
    secret.chmod(0o600)
    port = free_port()
    proc = Background([agent, "--secret-file", str(secret), "--listen", "127.0.0.1:0",
                       "--metrics-port", str(port)])
    try:
        status, text = wait_until(lambda: get(port, "/metrics"), 20, "hvd-agent's /metrics")
        assert status == 200
        assert re.search(r"^hvd_agent_processes_started_total 0$", text, re.M), text
        assert 'hvd_agent_refused_calls_total{reason="unauthenticated"} 0' in text
        assert "a-secret-of-the-agent-test" not in text
        assert get(port, "/")[0] == 404
    finally:
        proc.close()
    bad = Background([agent, "--secret-file", str(secret), "--listen", "127.0.0.1:0",
                      "--metrics-port", "70000"])
    try:
        assert bad.wait(20) == 2
        assert any("--metrics-port '70000'" in line for line in bad.stderr), bad.stderr
    finally:
        bad.close()
