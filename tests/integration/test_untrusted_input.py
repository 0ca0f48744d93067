"""Issue 21 items 1, 2 and 6 end to end: input that must neither hang, exhaust nor fool
hvdrun and hvd-agent. Sizes beyond the limits, settings outside their set of values, duplicate
config keys and binary bytes are refused in one line (exit 2); FIFOs and weak or foreign secret
and key files are refused at once; a read of stdin has a deadline and a stop signal ends it."""
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN_DIR, Background, child_env, executable, run


@pytest.fixture(scope="module")
def agent():
    return executable("hvd-agent")


def assert_refused(r, expected, program="hvdrun", seconds=10):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"{program}: error: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    assert r.duration < seconds, f"took {r.duration:.1f} s"


def private_file(path, text, mode=0o600):
    path.write_text(text)
    path.chmod(mode)
    return str(path)


SECRET = "q8Jx0lA3vV9mZb1r2T6yWcP4sN7kE5dH\n"


# Item 1: the sizes are refused before any per-rank data is built.
@pytest.mark.parametrize("args,expected", [
    (["-np", "1000000"], ["-np 1000000", "65536"]),
    (["-np", "20000"], ["-np 20000", "4096"]),
    (["-np", "5000"], ["-np 5000", "4096"]),
    (["-np", "1", "-H", "localhost:1000000"], ["'1000000'", "4096"]),
    (["-np", "1", "--min-np", "1", "--max-np", "1000000"], ["--max-np 1000000", "65536"]),
], ids=["np-million", "np-20000", "np-one-host", "H-huge-slots", "max-np-huge"])
def test_impossible_sizes(hvdrun, tmp_path, args, expected):
    marker = tmp_path / "started"
    r = run([hvdrun, *args, "touch", str(marker)], timeout=30)
    assert_refused(r, expected, seconds=5)
    assert not marker.exists()


# Item 6: a setting outside its set of values is refused by hvdrun, not by every worker.
@pytest.mark.parametrize("args,env,expected", [
    (["--cpu-transport", "foo"], {}, ["--cpu-transport", "'foo'", "gloo"]),
    (["--gpu-transport", "shm"], {}, ["--gpu-transport", "'shm'"]),
    ([], {"HVD_CPU_TRANSPORT": "tcp"}, ["HVD_CPU_TRANSPORT", "'tcp'"]),
    (["-x", "HVD_CPU_TRANSPORT=foo"], {}, ["-x HVD_CPU_TRANSPORT", "'foo'"]),
], ids=["cpu-flag", "gpu-flag", "cpu-env", "cpu-x"])
def test_transport_outside_its_values(hvdrun, tmp_path, args, env, expected):
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "1", *args, "touch", str(marker)], timeout=30, env=env)
    assert_refused(r, expected)
    assert not marker.exists()


def test_duplicate_config_key(hvdrun, tmp_path):
    config = tmp_path / "hvd.yaml"
    config.write_text("start_timeout: 40\nterminate_grace: 2\nstart_timeout: 50\n")
    r = run([hvdrun, "-np", "1", "--config-file", str(config), "true"], timeout=30)
    assert_refused(r, [str(config), "'start_timeout'", "line 3", "line 1"])


def assert_escaped(stderr):
    assert "\\x1b" in stderr, stderr
    assert not any(ord(c) < 0x20 and c != "\n" for c in stderr), repr(stderr)
    assert "\ufffd" not in stderr and "\x7f" not in stderr, repr(stderr)


def test_binary_hostfile_is_escaped(hvdrun, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_bytes(b"localhost slots=1\n\x1b]0;pwned\x07h\xff slots=1\n")
    r = run([hvdrun, "--hostfile", str(hostfile), "true"], timeout=30)
    assert_refused(r, [f"{hostfile}:2: "])
    assert_escaped(r.stderr)


def test_binary_discovery_output_is_escaped(hvdrun, tmp_path):
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\nprintf 'localhost:1\\n\\033[2Jh\\377:1\\n'\n")
    script.chmod(0o700)
    r = run([hvdrun, "-np", "1", "--host-discovery-script", str(script), "true"], timeout=30)
    assert_refused(r, ["line 2"])
    assert_escaped(r.stderr)


# Item 2: a FIFO is refused at once (it used to block both programs in open()).
def test_fifo_secret_file_hvdrun(hvdrun, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    r = run([hvdrun, "-np", "1", "-H", "10.0.0.1:1", "--secret-file", str(fifo), "true"],
            timeout=20)
    assert_refused(r, [str(fifo), "not a regular file"], seconds=5)


def test_fifo_secret_file_agent(agent, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    r = run([agent, "--secret-file", str(fifo), "--listen", "127.0.0.1:0"], timeout=20)
    assert_refused(r, [str(fifo), "not a regular file"], program="hvd-agent", seconds=5)


def test_fifo_hostfile_without_writer_ends_on_sigterm(hvdrun, tmp_path):
    fifo = tmp_path / "hosts"
    os.mkfifo(fifo, 0o600)
    proc = Background([hvdrun, "--hostfile", str(fifo), "true"])
    try:
        time.sleep(1)
        proc.proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == -signal.SIGTERM
    finally:
        proc.close()


def agent_on_silent_stdin(agent):
    """hvd-agent --secret-stdin whose stdin is a pipe nobody writes (its write end kept open)."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([agent, "--secret-stdin", "--listen", "127.0.0.1:0"], stdin=read_end,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), start_new_session=True)
    os.close(read_end)
    return proc, write_end


def test_secret_stdin_without_writer_ends_on_sigterm(agent):
    proc, write_end = agent_on_silent_stdin(agent)
    try:
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == -signal.SIGTERM
    finally:
        os.close(write_end)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_secret_stdin_has_a_deadline(agent):
    proc, write_end = agent_on_silent_stdin(agent)
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        os.close(write_end)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, err
    assert time.monotonic() - start < 20
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hvd-agent: error: "), err
    assert "stdin" in lines[0] and "10 s" in lines[0]


# Item 6: weak secrets, foreign owners and open private keys are refused like open secrets.
def test_weak_secret(hvdrun, agent, tmp_path):
    weak = private_file(tmp_path / "weak", " " * 15 + "x\n")
    r = run([hvdrun, "-np", "1", "-H", "10.0.0.1:1", "--secret-file", weak, "true"], timeout=20)
    assert_refused(r, [weak, "not blank"])
    r = run([agent, "--secret-file", weak, "--listen", "127.0.0.1:0"], timeout=20)
    assert_refused(r, [weak, "not blank"], program="hvd-agent")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_foreign_secret_owner(hvdrun, agent, tmp_path):
    foreign = private_file(tmp_path / "foreign", SECRET)
    os.chown(foreign, 65534, 65534)
    r = run([hvdrun, "-np", "1", "-H", "10.0.0.1:1", "--secret-file", foreign, "true"], timeout=20)
    assert_refused(r, [foreign, "owned by uid 65534"])
    r = run([agent, "--secret-file", foreign, "--listen", "127.0.0.1:0"], timeout=20)
    assert_refused(r, [foreign, "owned by uid 65534"], program="hvd-agent")


def test_open_tls_key(agent, tmp_path):
    key = tmp_path / "agent.key"
    cert = tmp_path / "agent.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                           "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                           str(cert), "-subj", "/CN=hvd-test", "-days", "1"],
                          capture_output=True, timeout=60)
    if made.returncode != 0:
        pytest.skip("openssl cannot make a certificate here")
    key.chmod(0o644)
    secret = private_file(tmp_path / "secret", SECRET)
    r = run([agent, "--secret-file", secret, "--listen", "127.0.0.1:0", "--tls-cert", str(cert),
             "--tls-key", str(key), "--tls-ca", str(cert)], timeout=20)
    assert_refused(r, ["--tls-key", str(key), "mode 0644"], program="hvd-agent")
    assert "PRIVATE KEY" not in r.stderr


# Issue 29 item 5: a secret file on a kernel pseudo filesystem (/proc/self/environ: a 0400 file
# of this user, the reader's own environment) is refused like an open one.
def test_secret_file_in_proc(hvdrun, agent):
    r = run([agent, "--secret-file", "/proc/self/environ", "--listen", "127.0.0.1:0"], timeout=20)
    assert_refused(r, ["/proc/self/environ", "kernel's proc filesystem"], program="hvd-agent",
                   seconds=5)
    r = run([hvdrun, "-np", "1", "-H", "10.0.0.1:1", "--secret-file", "/proc/self/environ",
             "true"], timeout=20)
    assert_refused(r, ["/proc/self/environ", "kernel's proc filesystem"], seconds=5)


# Issue 29 item 6: the TLS files are checked as a set before anything else: a key of another
# certificate, or a key given as a certificate, is a usage error at once (it was a raw gRPC line,
# then "cannot listen" with exit 1 from hvd-agent and 30 s of waiting from hvdrun).
@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA and two leaf certificates (a, b) it signed; keys 0600."""
    d = tmp_path_factory.mktemp("pki")
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [["openssl", "req", "-x509", *new_key, "-keyout", "ca.key", "-out", "ca.pem", "-days",
              "2", "-subj", "/CN=hvd-test-ca"]]
    for name in ("a", "b"):
        steps += [["openssl", "req", *new_key, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                   "-subj", f"/CN={name}"],
                  ["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
                   "ca.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", "2"]]
    for step in steps:
        if subprocess.run(step, cwd=d, capture_output=True, timeout=60).returncode != 0:
            pytest.skip("openssl cannot make certificates here")
    for key in ("ca.key", "a.key", "b.key"):
        (d / key).chmod(0o600)
    return d


def tls_args(pki, cert, key, ca):
    return ["--tls-cert", str(pki / cert), "--tls-key", str(pki / key), "--tls-ca", str(pki / ca)]


@pytest.mark.parametrize("cert,key,ca,expected", [
    ("a.pem", "b.key", "ca.pem", ["--tls-key file", "b.key", "does not match the certificate of "
                                  "--tls-cert file", "a.pem", "(CN=a)"]),
    ("a.key", "a.key", "ca.pem", ["--tls-cert file", "a.key' holds a private key, not a "
                                  "certificate"]),
    ("a.pem", "a.key", "ca.key", ["--tls-ca file", "ca.key' holds a private key, not a "
                                  "certificate"]),
], ids=["key-of-another-cert", "key-as-cert", "key-as-ca"])
def test_tls_files_checked_as_a_set(hvdrun, agent, pki, tmp_path, cert, key, ca, expected):
    secret = private_file(tmp_path / "secret", SECRET)
    tls = tls_args(pki, cert, key, ca)
    r = run([agent, "--secret-file", secret, "--listen", "127.0.0.1:0", *tls], timeout=20)
    assert_refused(r, expected, program="hvd-agent", seconds=5)
    marker = tmp_path / "started"
    r = run([hvdrun, "-np", "1", "-H", "10.0.0.1:1", "--secret-file", secret, *tls,
             "touch", str(marker)], timeout=40)
    assert_refused(r, expected, seconds=5)
    assert "PRIVATE KEY" not in r.stderr
    assert not marker.exists()
    # A local job checks them too: they are hvdrun's options, whatever the hosts.
    r = run([hvdrun, "-np", "1", *tls, "touch", str(marker)], timeout=40)
    assert_refused(r, expected, seconds=5)
    assert not marker.exists()
