"""Fixtures for the multihost tests: four namespace hosts, their agents, hvdrun.

    cluster  (session)  namespaces hvdmh-h1..h4 on bridge hvdmh-br (netns.py);
                        skips every test without root or `ip netns`
    secret   (session)  a 0600 shared-secret file
    agents   (session)  one hvd-agent per namespace; agents.ensure(tls=...)
                        (re)starts them in the wanted mode, logs go to files
    tls      (session)  CA, per-host server certificates and a client
                        certificate made with the openssl CLI
    hvdrun   (function) runs build/bin/hvdrun in the root namespace with
                        h1..h4 resolvable (private /etc/hosts)

Every subprocess has a deadline; whatever a test started is killed and the
namespaces are deleted even when it fails.
"""
import os
import pathlib
import re
import secrets
import signal
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import netns  # noqa: E402

BUILD_DIR = pathlib.Path(
    os.environ.get("HVD_BUILD_DIR", pathlib.Path(__file__).resolve().parents[2] / "build"))
BIN_DIR = BUILD_DIR / "bin"
PYTHON = os.environ.get("HVD_PYTHON", "/usr/bin/python3")
AGENT_PORT = 29470
HOSTS = "h1:2,h2:2,h3:2"   # 6 ranks, host-major: ranks 0,1 on h1; 2,3 on h2; 4,5 on h3


def executable(name):
    path = BIN_DIR / name
    assert path.is_file() and os.access(path, os.X_OK), f"{name} is not built: expected {path}"
    return str(path)


def child_env(extra=None):
    """hvdrun's environment: ours without HVD_*/HOROVOD_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HVD_") and not k.startswith("HOROVOD_")}
    env.update(extra or {})
    return env


# ---- the namespaces -----------------------------------------------------------

@pytest.fixture(scope="session")
def cluster():
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    netns.install_sigterm_teardown()
    c = netns.Cluster(4)
    try:
        c.setup()
    except RuntimeError as e:  # e.g. a container that may list but not add namespaces
        pytest.skip(f"cannot build the namespace hosts here: {e}")
    try:
        yield c
    finally:
        c.teardown()
        if c.leaks:
            print(f"multihost teardown killed leaked processes: {c.leaks}")


@pytest.fixture(scope="session")
def secret(cluster):
    path = cluster.workdir / "secret"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return str(path)


# ---- TLS material -------------------------------------------------------------

def _openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"openssl {' '.join(args)} failed: {r.stderr}"


def _make_cert(directory, name, subject, ca, extensions):
    """EC P-256 key `name`.key and certificate `name`.pem signed by `ca` (or self-signed)."""
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
             cwd=directory)
    sign = ["-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial"] if ca else \
        ["-signkey", f"{name}.key"]
    _openssl("x509", "-req", "-in", f"{name}.csr", "-out", f"{name}.pem", "-days", "2",
             "-sha256", "-extfile", f"{name}.ext", *sign, cwd=directory)
    os.chmod(directory / f"{name}.key", 0o600)


@pytest.fixture(scope="session")
def tls(cluster):
    return make_tls_files(cluster)


def make_tls_files(cluster):
    """{'ca': path, 'client': (cert, key), 'hX': (cert, key), 'rogue': (cert, key) signed by
    another CA} under the cluster's workdir."""
    d = cluster.workdir / "tls"
    d.mkdir()
    _make_cert(d, "ca", "/CN=hvdmh test CA", None,
               "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
    files = {"ca": str(d / "ca.pem")}
    for h in cluster.hosts:
        _make_cert(d, h.name, f"/CN={h.name}", "ca",
                   "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=serverAuth\n"
                   f"subjectAltName=DNS:{h.name},IP:{h.address}\n")
        files[h.name] = (str(d / f"{h.name}.pem"), str(d / f"{h.name}.key"))
    _make_cert(d, "client", "/CN=hvdrun", "ca",
               "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
               "extendedKeyUsage=clientAuth\n")
    files["client"] = (str(d / "client.pem"), str(d / "client.key"))
    # A client certificate from a CA the agents do not trust.
    _make_cert(d, "rogue-ca", "/CN=rogue CA", None,
               "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
    _make_cert(d, "rogue", "/CN=hvdrun", "rogue-ca",
               "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
               "extendedKeyUsage=clientAuth\n")
    files["rogue"] = (str(d / "rogue.pem"), str(d / "rogue.key"))
    return files


# ---- agents -------------------------------------------------------------------

class Agent:
    def __init__(self, host, proc, log_path, tls):
        self.host = host
        self.proc = proc
        self.log_path = log_path
        self.tls = tls

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class Agents:
    """One hvd-agent per namespace host, listening on 0.0.0.0:29470."""

    def __init__(self, cluster, secret, tls_files):
        self.cluster = cluster
        self.secret = secret
        self.tls_files = tls_files
        self.binary = executable("hvd-agent")
        self.by_name = {}
        self._count = 0

    def start(self, host, tls=False, timeout=20):
        args = [self.binary, "--secret-file", self.secret, "--listen", f"0.0.0.0:{AGENT_PORT}",
                "--orphan-grace", "5", "--log-level", "info"]
        if tls:
            files = self.tls_files()
            cert, key = files[host.name]
            args += ["--tls-cert", cert, "--tls-key", key, "--tls-ca", files["ca"]]
        self._count += 1
        log_path = self.cluster.workdir / f"agent-{host.name}-{self._count}.log"
        with open(log_path, "w") as log:
            proc = self.cluster.spawn(args, host=host, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, env=child_env())
        agent = Agent(host, proc, log_path, tls)
        self.by_name[host.name] = agent
        deadline = time.monotonic() + timeout
        listening = self.cluster.wait_tcp(host.address, AGENT_PORT, timeout, alive=agent.alive)
        while listening and "listening on" not in agent.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not listening or "listening on" not in agent.log():
            self.stop(host)
            raise AssertionError(f"hvd-agent on {host.name} did not start listening on "
                                 f"{host.address}:{AGENT_PORT} within {timeout} s "
                                 f"(exit {proc.poll()}); its log:\n{agent.log()}")
        return agent

    def stop(self, host, timeout=10):
        """SIGTERM (the agent terminates its jobs and exits 0), SIGKILL after `timeout` s."""
        agent = self.by_name.pop(host.name, None)
        if agent is None:
            return None
        if agent.alive():
            agent.proc.send_signal(signal.SIGTERM)
            try:
                agent.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                agent.proc.kill()
                agent.proc.wait(timeout=10)
        self.cluster.forget(agent.proc)
        return agent.proc.returncode

    def kill(self, host):
        """SIGKILL, as when the host vanishes; the agent stays recorded as dead."""
        agent = self.by_name[host.name]
        agent.proc.send_signal(signal.SIGKILL)
        agent.proc.wait(timeout=10)

    def ensure(self, tls=False):
        """Every host has a live agent in the wanted mode (restarting the others)."""
        for h in self.cluster.hosts:
            agent = self.by_name.get(h.name)
            if agent is not None and agent.alive() and agent.tls == tls:
                continue
            self.stop(h)
            self.start(h, tls=tls)
        return self

    def __getitem__(self, name):
        return self.by_name[name]

    def pids(self):
        return {a.pid for a in self.by_name.values() if a.alive()}

    def stop_all(self):
        for h in self.cluster.hosts:
            self.stop(h)


@pytest.fixture(scope="session")
def agents(cluster, secret, request):
    a = Agents(cluster, secret, lambda: request.getfixturevalue("tls"))
    try:
        yield a
    finally:
        a.stop_all()


@pytest.fixture
def plain_agents(agents):
    return agents.ensure(tls=False)


# ---- hvdrun -------------------------------------------------------------------

class Result(subprocess.CompletedProcess):
    duration = 0.0


class Job:
    """hvdrun running in the background; stdout/stderr lines collected as they come."""

    def __init__(self, cluster, args, env=None):
        self.args = args
        self.start = time.monotonic()
        self.proc = cluster.spawn(cluster.launcher_args(args), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  errors="replace", env=child_env(env))
        self.stdout, self.stderr = [], []
        self._lock = threading.Lock()
        self._readers = [threading.Thread(target=self._read, args=(s, lines), daemon=True)
                         for s, lines in ((self.proc.stdout, self.stdout),
                                          (self.proc.stderr, self.stderr))]
        for r in self._readers:
            r.start()

    def _read(self, stream, lines):
        for line in stream:
            with self._lock:
                lines.append(line.rstrip("\n"))

    def text(self):
        with self._lock:
            return ("stdout:\n" + "\n".join(self.stdout) + "\nstderr:\n" + "\n".join(self.stderr))

    def lines(self):
        """The stdout lines so far."""
        with self._lock:
            return list(self.stdout)

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(list(self.stdout)):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.args}: expected output did not arrive within {timeout} s "
                             f"(exit {self.proc.poll()})\n{self.text()}")

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.args} did not end within {timeout} s\n{self.text()}")
        for r in self._readers:
            r.join(timeout=10)
        result = Result(self.args, self.proc.returncode, "\n".join(self.stdout) + "\n",
                        "\n".join(self.stderr) + "\n")
        result.duration = time.monotonic() - self.start
        return result

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


class Hvdrun:
    def __init__(self, cluster):
        self.cluster = cluster
        self.binary = executable("hvdrun")
        self.jobs = []

    def start(self, args, env=None):
        job = Job(self.cluster, [self.binary, *map(str, args)], env=env)
        self.jobs.append(job)
        return job

    def __call__(self, args, timeout=60, env=None):
        return self.start(args, env=env).wait(timeout)

    def close(self):
        for job in self.jobs:
            job.kill()
            self.cluster.forget(job.proc)


@pytest.fixture
def hvdrun(cluster):
    h = Hvdrun(cluster)
    try:
        yield h
    finally:
        h.close()


# ---- checks -------------------------------------------------------------------

WORKER_LINE = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:(.*)$")


def worker_lines(text, stream="stdout"):
    """{rank: [lines]} from hvdrun's prefixed output."""
    lines = {}
    for line in text.splitlines():
        m = WORKER_LINE.match(line)
        if m and m.group(2) == stream:
            lines.setdefault(int(m.group(1)), []).append(m.group(3))
    return lines


def stray_processes(cluster, agents, timeout):
    """{host: ['pid cmdline']} of processes other than the agents still in a namespace
    after polling for `timeout` s; {} when every namespace holds only its agent."""
    deadline = time.monotonic() + timeout
    while True:
        keep = agents.pids()
        left = {h.name: cluster.describe(p) for h in cluster.hosts
                if (p := [pid for pid in cluster.pids(h) if pid not in keep])}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
