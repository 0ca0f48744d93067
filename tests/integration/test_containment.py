"""Issue 29: no process a job starts outlives it, whatever it does and however
the job ends (docs/agent.md, "Containment").

Every worker runs workers/leave_children.sh, which leaves one child of each
kind (KINDS: in the worker's process group, nohup, ignoring SIGTERM, setsid,
a new session with a child, a daemon), each named TOKEN-RANK-KIND in ps.
Each way of ending (WAYS) runs one hvdrun job per containment (HVD_CONTAINMENT:
a cgroup per job where this machine allows it, skipped saying why otherwise;
subreaper always); then one test per kind of child counts what is left of
that kind (0). hvd-agent killed with SIGKILL or cut off from its launcher:
tests/unit/daemon/agent/agent_binary_test.cc.
"""
import os
import pathlib
import signal
import time

import pytest

from conftest import Background, run

LEAVE_CHILDREN = str(pathlib.Path(__file__).resolve().parent / "workers" / "leave_children.sh")
KINDS = ("group", "nohup", "ignores-term", "setsid", "setsid-tree", "daemon")
MODES = ("cgroup", "subreaper")
# Way of ending -> the workers' actions (per rank) and what happens to hvdrun.
WAYS = {
    "success": ["exit:0"],                   # every rank exits 0 at once
    "failed-rank": ["sleep", "exit:3"],      # rank 1 fails, hvdrun ends rank 0
    "ctrl-c": ["sleep"],                     # SIGINT to hvdrun
    "sigkill-hvdrun": ["sleep"],             # SIGKILL to hvdrun
}
EXPECTED_CODE = {"success": 0, "failed-rank": 3, "ctrl-c": 130, "sigkill-hvdrun": -9}
NP = 2
LEFT_WITHIN = 15.0  # seconds after hvdrun ended (met at once unless the machine is loaded)


def _procs():
    """(pid, argv[0], state, session) of every process."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        yield int(entry), argv0, fields[0], int(fields[3])


def left(token, kind=None):
    """Running processes (zombies do not count) named TOKEN-RANK-KIND."""
    return [(pid, name) for pid, name, state, _ in _procs()
            if state != "Z" and name.startswith(token + "-")
            and (kind is None or name.endswith("-" + kind))]


def left_in_session(sid):
    return [(pid, name) for pid, name, state, session in _procs()
            if state != "Z" and session == sid]


def wait_until_none_left(token, timeout):
    deadline = time.monotonic() + timeout
    while left(token) and time.monotonic() < deadline:
        time.sleep(0.05)


_cgroup_check = {}


def cgroup_unusable(hvdrun):
    """Why HVD_CONTAINMENT=cgroup cannot run here (None when it can)."""
    if "why" not in _cgroup_check:
        r = run([hvdrun, "-np", "1", "true"], timeout=60, env={"HVD_CONTAINMENT": "cgroup"})
        _cgroup_check["why"] = None if r.returncode == 0 else r.stderr.strip()
    return _cgroup_check["why"]


_jobs = {}


def job(hvdrun, mode, way):
    """Runs the job of (mode, way) once; its token, exit code, stderr and hvdrun's pid."""
    key = (mode, way)
    if key in _jobs:
        return _jobs[key]
    if mode == "cgroup" and cgroup_unusable(hvdrun):
        pytest.skip(f"cgroup containment cannot be used here: {cgroup_unusable(hvdrun)}")
    token = f"hvdci{os.getpid()}{mode[0]}{len(_jobs)}"
    proc = Background([hvdrun, "-np", str(NP), "--verbose", "bash", LEAVE_CHILDREN, token,
                       *WAYS[way]], env={"HVD_CONTAINMENT": mode})
    try:
        if way in ("ctrl-c", "sigkill-hvdrun"):
            proc.wait_for(lambda lines: sum("children up: 6" in l for l in lines) == NP,
                          timeout=60)
            os.kill(proc.proc.pid, signal.SIGINT if way == "ctrl-c" else signal.SIGKILL)
        code = proc.wait(timeout=60)
        wait_until_none_left(token, LEFT_WITHIN)
        # hvdrun runs in a session of its own: nothing may be left in it
        # (workers, keepers, the reaper), setsid'd children aside.
        deadline = time.monotonic() + LEFT_WITHIN
        while left_in_session(proc.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        result = {"token": token, "code": code, "stdout": list(proc.stdout),
                  "stderr": list(proc.stderr), "session": left_in_session(proc.proc.pid),
                  "left": {kind: left(token, kind) for kind in KINDS}}
    finally:
        proc.close()
        for pid, _ in left(token):  # what a failing job left, once counted
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    _jobs[key] = result
    return result


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", MODES)
def test_no_child_is_left(hvdrun, mode, way, kind):
    j = job(hvdrun, mode, way)
    context = "\n".join(j["stdout"] + j["stderr"])
    assert sum("children up: 6" in line for line in j["stdout"]) == NP, context
    assert j["left"][kind] == [], f"{kind} children outlived the job ({way})\n{context}"


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", MODES)
def test_the_job_ends_as_it_should_and_leaves_nothing_in_its_session(hvdrun, mode, way):
    j = job(hvdrun, mode, way)
    context = "\n".join(j["stdout"] + j["stderr"])
    assert j["code"] == EXPECTED_CODE[way], context
    assert j["session"] == [], context


@pytest.mark.parametrize("mode", MODES)
def test_verbose_says_which_containment_is_in_force(hvdrun, mode):
    j = job(hvdrun, mode, "success")
    said = [l for l in j["stderr"] if l.startswith("hvdrun: agent at ")]
    assert len(said) == 1, j["stderr"]
    if mode == "cgroup":
        assert ", containment cgroup (a cgroup v2 per job in /" in said[0], said
    else:
        assert said[0].endswith(", containment subreaper (HVD_CONTAINMENT=subreaper)"), said


def test_a_bad_containment_setting_is_a_usage_error(hvdrun):
    r = run([hvdrun, "-np", "1", "true"], timeout=30, env={"HVD_CONTAINMENT": "cgroups"})
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("hvdrun: error: HVD_CONTAINMENT='cgroups': expected auto, cgroup or "
                        "subreaper\n")
