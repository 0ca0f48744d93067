"""The processes around a chaos job (tests/multihost/chaos.py): its workers and
hot spares in the namespace hosts, the faults armed inside the workers
(elastic_train.py's ELASTIC_FAULT_DIR), the busy processes beside the job, and
the iptables rules of the network faults."""
import os
import pathlib
import re
import signal
import subprocess
import time

from chaos_plan import WORKER
from netns import process_state

PROMOTED = re.compile(r"promoted spare (\d+) on host (\S+) into rank (\d+)")


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


state = process_state  # the process's state letter in /proc, None when gone


def alive(pid):
    return state(pid) not in (None, "Z", "X")


def signal_pid(pid, sig):
    """os.kill that ignores a process already gone; whether it was there."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


class JobProcesses:
    """The job's workers and spares, found in the namespaces: a worker has
    HVD_RANK (its slot) in its environment, a spare HVD_SPARE (its id) until
    hvdrun's stderr says it was promoted into a slot. `stderr` returns hvdrun's
    stderr lines so far."""

    def __init__(self, cluster, hosts, spares_dir, stderr):
        self.cluster = cluster
        self.hosts = hosts
        self.spares_dir = pathlib.Path(spares_dir)
        self.stderr = stderr

    def promoted(self):
        """{spare id: slot} of the promotions hvdrun announced."""
        return {int(m.group(1)): int(m.group(3))
                for line in self.stderr() if (m := PROMOTED.search(line))}

    def _processes(self):
        """[(host, pid, env)] of the live training processes."""
        found = []
        for name in self.hosts:
            host = self.cluster.host(name)
            for pid in self.cluster.pids(host):
                if WORKER in self.cluster.describe([pid])[0] and alive(pid):
                    found.append((name, pid, environ(pid)))
        return found

    def workers(self, host=None):
        """[(slot, pid, host)] of the live workers (promoted spares included), by slot."""
        promoted = self.promoted()
        out = []
        for name, pid, env in self._processes():
            if host not in (None, name):
                continue
            if "HVD_RANK" in env:
                out.append((int(env["HVD_RANK"]), pid, name))
            elif "HVD_SPARE" in env and int(env["HVD_SPARE"]) in promoted:
                out.append((promoted[int(env["HVD_SPARE"])], pid, name))
        return sorted(out)

    def spares(self, waiting=True):
        """[(id, pid, host)] of the live spares not promoted, by id; `waiting`: only
        those in hvd.init() (their pid file, written right before it, is 0.5 s
        old; not stopped)."""
        promoted = self.promoted()
        out = []
        for name, pid, env in self._processes():
            if "HVD_SPARE" not in env or int(env["HVD_SPARE"]) in promoted:
                continue
            spare = int(env["HVD_SPARE"])
            if waiting:
                try:
                    age = time.time() - (self.spares_dir / f"spare.{spare}").stat().st_mtime
                except OSError:
                    continue
                if age < 0.5 or state(pid) == "T":
                    continue
            out.append((spare, pid, name))
        return sorted(out)

    def snapshot(self):
        """One line per training process: host, pid, /proc state, slot or spare id."""
        return [f"{name} pid {pid} state {state(pid)} "
                + (f"slot {env['HVD_RANK']}" if "HVD_RANK" in env else
                   f"spare {env.get('HVD_SPARE', '?')}")
                for name, pid, env in self._processes()]


class Arms:
    """Faults armed inside the workers: DIR/NAME.arm files that a matching
    worker claims and fires once, writing DIR/NAME.fired (elastic_train.py)."""

    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def arm(self, name, **fields):
        tmp = self.dir / f"{name}.tmp"
        tmp.write_text(" ".join(f"{k}={v}" for k, v in fields.items()))
        os.replace(tmp, self.dir / f"{name}.arm")

    def fired(self, name):
        """{pid, slot, spare, rank, t} once the fault fired (t: CLOCK_MONOTONIC), else None."""
        try:
            text = (self.dir / f"{name}.fired").read_text()
        except OSError:
            return None
        return dict(kv.split("=", 1) for kv in text.split())

    def claimed(self, name):
        return not (self.dir / f"{name}.arm").exists()

    def wait(self, name, timeout, running):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and running():
            got = self.fired(name)
            if got:
                return got
            time.sleep(0.02)
        return self.fired(name)

    def cancel(self, name):
        """Disarms an unclaimed fault; False when a worker claimed it first."""
        try:
            os.rename(self.dir / f"{name}.arm", self.dir / f"{name}.cancelled")
            return True
        except FileNotFoundError:
            return False


class Load:
    """`count` busy processes (`while :; do :; done`) beside the job, in the root
    namespace, each in its own session; stop() kills them by pid."""

    def __init__(self, count):
        self.procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                       start_new_session=True) for _ in range(count)]

    def stop(self):
        for proc in self.procs:
            signal_pid(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs = []


class Firewall:
    """iptables rules inserted in namespaces, each removed by remove()/clear()."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.rules = []     # (host, rule)

    def insert(self, host, rule):
        r = subprocess.run(self.cluster.exec_args(host, ["iptables", "-I", *rule]),
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError(f"iptables -I {' '.join(rule)} in {host.netns}: {r.stderr.strip()}")
        self.rules.append((host, rule))

    def remove(self, host, rule):
        subprocess.run(self.cluster.exec_args(host, ["iptables", "-D", *rule]),
                       capture_output=True, text=True, timeout=20)
        if (host, rule) in self.rules:
            self.rules.remove((host, rule))

    def clear(self):
        for host, rule in list(reversed(self.rules)):
            self.remove(host, rule)
