"""Shared helpers for the hvdrun end-to-end tests.

Every subprocess gets a timeout; hvdrun runs in a session of its own so that
a test can kill whatever is left when it fails.
"""
import os
import pathlib
import re
import signal
import subprocess
import threading
import time

import pytest

BUILD_DIR = pathlib.Path(
    os.environ.get("HVD_BUILD_DIR", pathlib.Path(__file__).resolve().parents[2] / "build"))
BIN_DIR = BUILD_DIR / "bin"


def executable(name):
    """Path of a program built into ${HVD_BUILD_DIR}/bin; fails when it is missing."""
    path = BIN_DIR / name
    assert path.is_file() and os.access(path, os.X_OK), f"{name} is not built: expected {path}"
    return str(path)


@pytest.fixture(scope="session")
def hvdrun():
    return executable("hvdrun")


def child_env(extra=None):
    """hvdrun's environment: ours without HVD_*/HOROVOD_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HVD_") and not k.startswith("HOROVOD_")}
    env.update(extra or {})
    return env


# Variables of a launcher the tests may themselves run under (a CI job in
# Slurm): workers must see only the ones a test sets.
FOREIGN_PREFIXES = ("SLURM_", "OMPI_", "PMIX_", "TORCHELASTIC_")
FOREIGN_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def clear_outer_launcher(monkeypatch):
    """Removes an outer launcher's variables from this process's environment."""
    for name in list(os.environ):
        if name.startswith(FOREIGN_PREFIXES) or name in FOREIGN_NAMES:
            monkeypatch.delenv(name)


def run(args, timeout=60, env=None, cwd=None):
    """Runs a command to its end; returns CompletedProcess with .duration."""
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", env=child_env(env), cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc)
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"{args} did not end within {timeout} s\nstdout:\n{out}\n"
                             f"stderr:\n{err}")
    result = subprocess.CompletedProcess(args, proc.returncode, out, err)
    result.duration = time.monotonic() - start
    return result


def kill_session(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Background:
    """A process whose stdout/stderr lines are collected while it runs."""

    def __init__(self, args, env=None, cwd=None):
        self.args = args
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, errors="replace", env=child_env(env), cwd=cwd,
                                     start_new_session=True)
        self.stdout = []
        self.stderr = []
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

    def wait_for(self, predicate, timeout):
        """Waits until predicate(stdout_lines) is true; fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(list(self.stdout)):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        with self._lock:
            raise AssertionError(f"{self.args}: expected output did not arrive within {timeout} s"
                                 f"\nstdout:\n" + "\n".join(self.stdout) +
                                 "\nstderr:\n" + "\n".join(self.stderr))

    def wait(self, timeout):
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(self.proc)
            raise AssertionError(f"{self.args} did not end within {timeout} s")
        for r in self._readers:
            r.join(timeout=10)
        return code

    def close(self):
        if self.proc.poll() is None:
            kill_session(self.proc)
            self.proc.wait(timeout=10)


def _proc_stats():
    """(pid, state, pgid) of every process, from /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        yield int(entry), fields[0], int(fields[2])


def live_pids_in_group(pgid):
    """Processes of the group that are running (zombies waiting for a reaper don't count)."""
    return [pid for pid, state, group in _proc_stats() if group == pgid and state != "Z"]


def pid_running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def assert_all_gone(pgids=(), pids=(), timeout=5.0):
    """Polls until no process of `pgids` and none of `pids` is running."""
    deadline = time.monotonic() + timeout
    while True:
        left_groups = {g: live for g in pgids if (live := live_pids_in_group(g))}
        left_pids = [p for p in pids if pid_running(p)]
        if not left_groups and not left_pids:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"still running after {timeout} s: process groups {left_groups}, "
                                 f"pids {left_pids}")
        time.sleep(0.05)
    for g in pgids:
        # A zombie nobody has reaped yet (no init in a container) still owns its group.
        if not any(group == g for _, _, group in _proc_stats()):
            with pytest.raises(ProcessLookupError):
                os.killpg(g, 0)


WORKER_LINE = re.compile(r"^\[(\d+)\]<stdout>:(.*)$")


def worker_lines(stdout):
    """{rank: [lines]} from hvdrun's prefixed stdout."""
    lines = {}
    for line in stdout.splitlines():
        m = WORKER_LINE.match(line)
        if m:
            lines.setdefault(int(m.group(1)), []).append(m.group(2))
    return lines
