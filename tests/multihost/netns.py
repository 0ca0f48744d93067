"""Several "hosts" on one machine: network namespaces on a bridge.

    cluster = Cluster(3)          # hvdmh-h1..hvdmh-h3 on bridge hvdmh-br
    cluster.setup()
    cluster.hosts[0].name         # "h1", address 10.77.0.11
    cluster.spawn(host, [...])    # a process inside the namespace (tracked)
    cluster.pids(host)            # every process in the namespace
    cluster.launcher_args([...])  # argv that runs a command in the root namespace
                                  # with a private /etc/hosts naming h1..hN
    cluster.teardown()            # kills what it started, deletes namespaces and links

Layout (root namespace = the "launcher machine"):

    hvdmh-br 10.77.0.1/24 (root namespace)
      ├─ hvdmh-h1-br  <veth>  eth0 10.77.0.11/24 in namespace hvdmh-h1 (default via 10.77.0.1)
      ├─ hvdmh-h2-br  <veth>  eth0 10.77.0.12/24 in namespace hvdmh-h2
      └─ ...

Everything this module creates is named hvdmh-* (another prefix and subnet
can be given: tests/slurm uses hvdsl-*, 10.78.0); a lock file serializes
concurrent users (two ctest runs in different build trees), and a run that
finds leftovers of a killed earlier run removes them first. Teardown runs from
a pytest finalizer, from atexit and on SIGTERM, and never raises.

Host names: /etc/hosts is not edited. `launcher_args` wraps a command in
`unshare --mount` (private propagation by default) and bind-mounts a
temporary hosts file over /etc/hosts inside that mount namespace only.
"""
import atexit
import fcntl
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PREFIX = "hvdmh"
BRIDGE = f"{PREFIX}-br"
SUBNET = "10.77.0"
BRIDGE_ADDRESS = f"{SUBNET}.1"
LOCK_FILE = "/run/hvdmh.lock"


def unavailable_reason():
    """Why namespaces cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "multihost tests need root (ip netns add, veth pairs, mount --bind)"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"multihost tests need the '{tool}' command"
    try:
        r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"'ip netns list' failed: {e}"
    if r.returncode != 0:
        return f"'ip netns' is unavailable: {r.stderr.strip()}"
    return None


def _run(args, check=True, timeout=20):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class Host:
    def __init__(self, index, prefix=PREFIX, subnet=SUBNET):
        self.index = index
        self.name = f"h{index}"                  # the name hvdrun sees (-H h1:2)
        self.netns = f"{prefix}-{self.name}"     # the namespace
        self.address = f"{subnet}.{10 + index}"  # eth0 inside the namespace
        self.bridge_port = f"{prefix}-{self.name}-br"  # veth end on the bridge
        self.peer = f"{prefix}-{self.name}-ns"   # veth end moved into the namespace (eth0)

    def __repr__(self):
        return f"Host({self.name}, {self.netns}, {self.address})"


def _namespaces():
    r = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _links():
    r = _run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in r.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def netns_pids(netns):
    """Pids of every process whose network namespace is `netns` (ip netns pids)."""
    r = _run(["ip", "netns", "pids", netns], check=False)
    if r.returncode != 0:
        return []
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def process_state(pid):
    """The process's state letter in /proc (R, S, D, T, Z, ...), None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def _alive(pid):
    return process_state(pid) not in (None, "Z")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


class Cluster:
    """`prefix` names the namespaces, links and lock file, `subnet` the /24 they use
    (another test suite passes its own, e.g. tests/slurm: hvdsl, 10.78.0)."""

    def __init__(self, count=3, workdir=None, prefix=PREFIX, subnet=SUBNET):
        self.prefix = prefix
        self.bridge = f"{prefix}-br"
        self.bridge_address = f"{subnet}.1"
        self.lock_file = f"/run/{prefix}.lock"
        self.hosts = [Host(i, prefix, subnet) for i in range(1, count + 1)]
        self._own_workdir = workdir is None
        self.workdir = pathlib.Path(workdir or tempfile.mkdtemp(prefix=f"{prefix}-"))
        self.hosts_file = self.workdir / "hosts"
        self._procs = []        # Popen objects this cluster started (own sessions)
        self._lock_fd = None
        self._up = False
        self.leaks = []         # "netns pid cmdline" of processes teardown had to kill

    # ---- life cycle -------------------------------------------------------

    def setup(self, lock_timeout=120):
        try:
            self._lock(lock_timeout)
            self._remove_leftovers()
            self._up = True
            _run(["ip", "link", "add", self.bridge, "type", "bridge"])
            _run(["ip", "addr", "add", f"{self.bridge_address}/24", "dev", self.bridge])
            _run(["ip", "link", "set", self.bridge, "up"])
            for h in self.hosts:
                _run(["ip", "netns", "add", h.netns])
                _run(["ip", "link", "add", h.bridge_port, "type", "veth",
                      "peer", "name", h.peer, "netns", h.netns])
                _run(["ip", "link", "set", h.bridge_port, "master", self.bridge])
                _run(["ip", "link", "set", h.bridge_port, "up"])
                ns = ["ip", "netns", "exec", h.netns]
                _run(ns + ["ip", "link", "set", "lo", "up"])
                _run(ns + ["ip", "link", "set", h.peer, "name", "eth0"])
                _run(ns + ["ip", "addr", "add", f"{h.address}/24", "dev", "eth0"])
                _run(ns + ["ip", "link", "set", "eth0", "up"])
                _run(ns + ["ip", "route", "add", "default", "via", self.bridge_address])
            lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
            lines += [f"{h.address} {h.name}" for h in self.hosts]
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.hosts_file.write_text("\n".join(lines) + "\n")
            atexit.register(self.teardown)
            self._check_names()
        except BaseException:
            self.teardown()
            raise
        return self

    def _check_names(self):
        """The private /etc/hosts trick works: h1 resolves in launcher_args' mount namespace."""
        h = self.hosts[0]
        r = subprocess.run(self.launcher_args(["getent", "hosts", h.name]), capture_output=True,
                           text=True, timeout=20)
        if r.returncode != 0 or h.address not in r.stdout.split():
            raise RuntimeError(f"cannot give the launcher a private /etc/hosts (unshare --mount, "
                               f"mount --bind): exit {r.returncode}: {r.stderr.strip()}")

    def teardown(self):
        """Kills what this cluster started, then deletes namespaces and links. Never raises."""
        try:
            for proc in self._procs:
                self._kill(proc)
            self._procs = []
            if self._up:
                # Anything still in a namespace descends from a process started
                # here (an agent's worker that outlived it): a leak, killed so
                # that the namespace can go.
                for h in self.hosts:
                    for pid in netns_pids(h.netns):
                        if _alive(pid):
                            self.leaks.append(f"{h.netns} {pid} {_cmdline(pid)}")
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                self._delete_links()
                self._up = False
        except Exception as e:  # teardown must not mask the test's own failure
            print(f"netns teardown: {e}")
        finally:
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            self._unlock()

    def _delete_links(self):
        for h in self.hosts:
            if h.netns in _namespaces():
                _run(["ip", "netns", "del", h.netns], check=False)
        links = _links()
        for h in self.hosts:
            if h.bridge_port in links:
                _run(["ip", "link", "del", h.bridge_port], check=False)
        if self.bridge in links:
            _run(["ip", "link", "del", self.bridge], check=False)

    def _remove_leftovers(self):
        """Namespaces and links named <prefix>-* from a run that was killed (we hold the lock)."""
        for ns in _namespaces():
            if ns.startswith(f"{self.prefix}-"):
                for pid in netns_pids(ns):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                _run(["ip", "netns", "del", ns], check=False)
        for link in _links():
            if link.startswith(f"{self.prefix}-"):
                _run(["ip", "link", "del", link], check=False)

    def _lock(self, timeout):
        self._lock_fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self._lock_fd)
                    self._lock_fd = None
                    raise RuntimeError(f"another run holds {self.lock_file} for {timeout} s")
                time.sleep(0.5)

    def _unlock(self):
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    # ---- processes --------------------------------------------------------

    def exec_args(self, host, args):
        """argv that runs `args` inside the host's namespace."""
        return ["ip", "netns", "exec", host.netns] + [str(a) for a in args]

    def launcher_args(self, args):
        """argv that runs `args` in the root namespace with h1..hN resolvable.

        unshare execs in place, and so does sh: the returned process's pid is
        the command's (signals sent to it reach the command itself)."""
        return ["unshare", "--mount", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', str(self.hosts_file)] + \
            [str(a) for a in args]

    def spawn(self, args, host=None, **popen_kwargs):
        """Starts a tracked process (own session), in `host`'s namespace when given."""
        argv = self.exec_args(host, args) if host is not None else [str(a) for a in args]
        popen_kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(argv, **popen_kwargs)
        self._procs.append(proc)
        return proc

    def forget(self, proc):
        if proc in self._procs:
            self._procs.remove(proc)

    @staticmethod
    def _kill(proc):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def pids(self, host):
        """Live (non-zombie) processes in the host's namespace."""
        return [p for p in netns_pids(host.netns) if _alive(p)]

    def describe(self, pids):
        return [f"{p} {_cmdline(p)}" for p in pids]

    # ---- network ----------------------------------------------------------

    @staticmethod
    def wait_tcp(address, port, timeout, alive=lambda: True):
        """Polls a TCP connect until it succeeds; False after `timeout` s or when not alive()."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not alive():
                return False
            try:
                with socket.create_connection((address, port), timeout=1):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def host(self, name):
        return next(h for h in self.hosts if h.name == name)


def install_sigterm_teardown():
    """Turns SIGTERM (ctest's timeout, a CI cancel) into KeyboardInterrupt so finalizers run."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, handler)
