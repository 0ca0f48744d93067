"""Helpers of the metrics tests (test_metrics*.py): a free loopback port, a
job started with --metrics-port, HTTP reads of its pages with deadlines, and
whether a tool the test drives (prometheus, chromium) must be there: always
in CI (CI or HVD_REQUIRE_METRICS_TOOLS set; deploy/install-deps.sh --tests
installs them), else the test is skipped naming the missing program."""
import json
import os
import pathlib
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import BUILD_DIR, Background

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WORKER = str(SOURCE / "tests" / "integration" / "workers" / "metrics_worker.py")
ELASTIC_WORKER = str(SOURCE / "tests" / "integration" / "workers" / "elastic_train.py")
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}


def require_tool(name, *candidates):
    """The path of the first of `candidates` on PATH; skips (or fails in CI) without one."""
    for c in candidates or (name,):
        path = shutil.which(c)
        if path:
            return path
    reason = (f"{name} is not installed ({', '.join(candidates or (name,))} not on PATH); "
              "deploy/install-deps.sh --tests installs it")
    if os.environ.get("CI") or os.environ.get("HVD_REQUIRE_METRICS_TOOLS"):
        pytest.fail(reason + " (required in CI)")
    pytest.skip(reason)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=5):
    """(status, body text) of http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_until(check, timeout, what, job=None, seen=None):
    """Calls check() until it returns something true; fails naming `what` after `timeout` s,
    or at once with hvdrun's output when `job` (a conftest.Background) ended; `seen`, a list
    the check fills, is shown in the failure."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if job is not None and job.proc.poll() is not None:
            raise AssertionError(f"hvdrun ended ({job.proc.returncode}) before {what}:\n" +
                                 "\n".join(job.stdout[-20:] + job.stderr[-40:]))
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError) as e:  # not up yet
            last = e
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s; last: {last!r}" +
                         (f"; seen: {seen}" if seen else ""))


def state(port):
    status, body = get(port, "/state.json")
    assert status == 200, body
    return json.loads(body)


def start_job(hvdrun, port, end_file, np=2, extra=(), worker_args=None, env=None):
    """hvdrun -np NP --metrics-port PORT running metrics_worker.py until END_FILE exists
    (or the worker and its arguments `worker_args`)."""
    args = [hvdrun, "-np", str(np), "--metrics-port", str(port), *extra, sys.executable]
    args += worker_args if worker_args is not None else [WORKER, str(end_file)]
    return Background(args, env={**ENV, **(env or {})})
