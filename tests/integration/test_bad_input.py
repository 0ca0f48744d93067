"""Malformed input: exit code 2, one stderr line naming the bad token, nothing started."""
import time

import pytest

from conftest import run

# (id, hvdrun arguments before the command, text the error line must contain)
CASES = [
    ("H-no-slots", ["-np", "1", "-H", "host:"], "'host:'"),
    ("H-zero-slots", ["-np", "1", "-H", "host:0"], "'0'"),
    ("H-bad-slots", ["-np", "1", "-H", "host:x"], "'x'"),
    ("H-negative-slots", ["-np", "1", "-H", "host:-1"], "'-1'"),
    ("H-no-host", ["-np", "1", "-H", ":4"], "':4'"),
    ("H-empty", ["-np", "1", "-H", ""], "empty host list"),
    ("H-empty-entry", ["-np", "1", "-H", "localhost:1,,127.0.0.1:1"], "'localhost:1,,127.0.0.1:1'"),
    ("H-duplicate", ["-np", "2", "-H", "localhost:1,localhost:1"], "'localhost'"),
    ("np-too-big", ["-np", "5", "-H", "localhost:2,127.0.0.1:2"], "-np 5"),
    ("np-zero", ["-np", "0"], "-np 0"),
    ("np-not-a-number", ["-np", "two"], "two"),
    ("np-missing", [], "-np"),
    ("unknown-flag", ["-np", "1", "--no-such-flag"], "--no-such-flag"),
    ("mpirun-n", ["-n", "1"], "-n (did you mean -np?)"),
    # A job on this machine alone binds to loopback, but the name must exist.
    ("no-such-interface", ["-np", "1", "--network-interface", "eth9"],
     "host localhost has none of the interfaces eth9 (it has: lo"),
    ("H-and-hostfile", ["-np", "1", "-H", "localhost:1", "--hostfile", "/dev/null"], "--hostfile"),
    ("bad-start-timeout", ["-np", "1", "--start-timeout", "0"], "'0'"),
    ("bad-terminate-grace", ["-np", "1", "--terminate-grace", "soon"], "'soon'"),
    ("bad-log-level", ["-np", "1", "--log-level", "loud"], "'loud'"),
    ("bad-env-name", ["-np", "1", "-x", "9LIVES=1"], "'9LIVES'"),
    ("missing-config-file", ["-np", "1", "--config-file", "/nonexistent/hvd.yaml"],
     "/nonexistent/hvd.yaml"),
    ("missing-hostfile", ["--hostfile", "/nonexistent/hosts"], "/nonexistent/hosts"),
]


def assert_refused(r, marker, expected):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("hvdrun: error: "), lines[0]
    assert expected in lines[0]
    assert r.stdout == ""
    assert not marker.exists(), "a worker was started"


@pytest.mark.parametrize("args,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused(hvdrun, tmp_path, args, expected):
    marker = tmp_path / "started"
    r = run([hvdrun, *args, "touch", str(marker)], timeout=20)
    assert_refused(r, marker, expected)


def test_bad_env_setting(hvdrun, tmp_path):
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "1", "touch", str(marker)], timeout=20,
            env={"HVD_START_TIMEOUT": "-3"})
    assert_refused(r, marker, "HVD_START_TIMEOUT")
    assert "'-3'" in r.stderr


def test_bad_config_value(hvdrun, tmp_path):
    marker = tmp_path / "started"
    config = tmp_path / "hvd.yaml"
    config.write_text("start_timeout: never\n")
    r = run([hvdrun, "-np", "1", "--config-file", str(config), "touch", str(marker)], timeout=20)
    assert_refused(r, marker, "'never'")


@pytest.mark.parametrize("line,expected", [
    ("localhost slots=x", "'x'"),
    ("localhost slots=0", "'0'"),
    ("localhost slot=2", "'slot=2'"),
    ("localhost slots=1 extra", "'extra'"),
    ("localhost:", "'localhost:'"),
])
def test_bad_hostfile_line(hvdrun, tmp_path, line, expected):
    marker = tmp_path / "started"
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"# comment\n127.0.0.1 slots=1\n{line}\n")
    r = run([hvdrun, "--hostfile", str(hostfile), "touch", str(marker)], timeout=20)
    assert_refused(r, marker, f"{hostfile}:3: ")
    assert expected in r.stderr


def test_missing_command(hvdrun):
    r = run([hvdrun, "-np", "2"], timeout=20)
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("hvdrun: error: missing command")


def test_remote_host_without_secret(hvdrun, tmp_path, monkeypatch):
    monkeypatch.delenv("HVD_SECRET_FILE", raising=False)
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "2", "-H", "localhost:1,192.0.2.1:1", "touch", str(marker)],
            timeout=20)
    assert_refused(r, marker, "")
    assert r.stderr.count("\n") == 1
    assert "'192.0.2.1'" in r.stderr and "--secret-file" in r.stderr


def test_a_host_that_does_not_resolve_is_reported_before_the_missing_secret(
        hvdrun, tmp_path, monkeypatch):
    # The order a user fixes them in: the name, then the credentials.
    monkeypatch.delenv("HVD_SECRET_FILE", raising=False)
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "2", "-H", "nosuchhost.invalid:2", "touch", str(marker)], timeout=30)
    assert_refused(r, marker, "host 'nosuchhost.invalid' does not resolve")


def test_a_remote_host_that_does_not_resolve_fails_at_once(hvdrun, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    marker = tmp_path / "started"
    start = time.monotonic()
    r = run([hvdrun, "-np", "2", "-H", "localhost:1,remote-host.invalid:1", "--secret-file",
             str(secret), "--start-timeout", "30", "touch", str(marker)], timeout=60)
    assert time.monotonic() - start < 15, "waited for the start timeout"
    assert_refused(r, marker, "host 'remote-host.invalid' does not resolve")
    assert "0123456789abcdef" not in r.stderr


def test_unreachable_remote_host(hvdrun, tmp_path):
    # Resolves, but no agent listens there.
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "2", "-H", "localhost:1,192.0.2.1:1", "--secret-file",
             str(secret), "--start-timeout", "3", "touch", str(marker)], timeout=30)
    assert r.returncode == 1, r.stderr
    assert not marker.exists()
    assert "cannot reach the agent on host 192.0.2.1" in r.stderr, r.stderr
    assert "0123456789abcdef" not in r.stderr
