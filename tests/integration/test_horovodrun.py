"""horovodrun (a link to hvdrun; docs/launcher.md): a Horovod script and a
horovodrun command line run as they are, in compatibility mode, and remote
hosts are reached over ssh (-p its port). Every horovodrun line of README.md
and docs/migrating.md runs here as documented. hvdrun without
--horovod-compat says once what to add when the workers cannot import
horovod, and which interpreter they ran when it has no torch; an unknown
flag gets "did you mean"."""
import os
import pathlib
import re
import shlex

import pytest

from conftest import BIN_DIR, BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
HOROVOD_SCRIPT = ("import horovod.torch as hvd, torch; hvd.init(); "
                  "print('sum', hvd.rank(), hvd.allreduce(torch.ones(2) * (hvd.rank() + 1), "
                  "op=hvd.Sum).tolist())")
# The documents' placeholders for a Horovod script.
SCRIPT_NAMES = ("train.py", "horovod_script.py")


def documented_lines():
    """(document, line) for each command line of a ```sh block of README.md and
    docs/migrating.md that starts horovodrun, or hvdrun --horovod-compat."""
    lines = []
    for doc in ("README.md", "docs/migrating.md"):
        text = (SOURCE / doc).read_text()
        for block in re.findall(r"```sh\n(.*?)```", text, re.S):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if words[:1] == ["horovodrun"] or (words[:1] == ["hvdrun"] and
                                                   "--horovod-compat" in words):
                    lines.append((doc, words))
    return lines


def remote_hosts(words):
    """The hosts of -H that are not this machine (the documents' host1, h1, ...)."""
    hosts = words[words.index("-H") + 1] if "-H" in words else "localhost"
    return [h.split(":")[0] for h in hosts.split(",") if h.split(":")[0] != "localhost"]


def test_the_documented_lines_are_found():
    found = [" ".join(words) for _, words in documented_lines()]
    assert len(found) >= 5, found
    assert any("-p" in line.split() and not remote_hosts(line.split()) for line in found), found
    assert any(remote_hosts(line.split()) for line in found), found


def test_each_documented_local_line_runs_as_documented(tmp_path):
    (tmp_path / "train.py").write_text(HOROVOD_SCRIPT + "\n")
    (tmp_path / "horovod_script.py").write_text(HOROVOD_SCRIPT + "\n")
    # The lines as they are; the environment gives a loaded CI machine time
    # (five jobs of two torch workers each).
    env = dict(ENV, PATH=f"{BIN_DIR}:{os.environ['PATH']}", HVD_START_TIMEOUT="120",
               HVD_HEARTBEAT_TIMEOUT_SECONDS="60")
    for doc, words in documented_lines():
        if remote_hosts(words):
            continue
        r = run(words, timeout=120, env=env, cwd=tmp_path)
        where = f"{doc}: {' '.join(words)}\n{r.stdout}{r.stderr}"
        assert r.returncode == 0, where
        np = int(words[words.index("-np") + 1])
        for rank in range(np):
            assert f"sum {rank} [{np * (np + 1) / 2}, {np * (np + 1) / 2}]" in r.stdout, where
        # -p on a job of this machine alone: one line says it is not used.
        notes = [line for line in r.stderr.splitlines() if line.startswith("hvdrun: note: ")]
        if "-p" in words:
            assert notes == ["hvdrun: note: -p/--ssh-port 2222 ignored: every host of this job is "
                             "this machine (ssh reaches remote hosts only)"], where
        else:
            assert notes == [], where


def test_each_documented_remote_line_reaches_its_hosts_over_ssh(tmp_path):
    # The documents' hosts, as addresses no one has (TEST-NET-1), and an ssh
    # that records how it was run and fails as an unreachable host does.
    record = tmp_path / "ssh-args"
    fake_ssh = tmp_path / "fake-ssh"
    fake_ssh.write_text(f"#!/bin/sh\necho \"$@\" >> {record}\n"
                        "echo 'ssh: connect to host: Connection refused' >&2\nexit 255\n")
    fake_ssh.chmod(0o755)
    env = dict(ENV, PATH=f"{BIN_DIR}:{os.environ['PATH']}")
    remote = [(doc, words) for doc, words in documented_lines() if remote_hosts(words)]
    assert remote
    for doc, words in remote:
        hosts = remote_hosts(words)
        line = " ".join(words)
        for i, host in enumerate(hosts):
            line = re.sub(rf"\b{re.escape(host)}:", f"192.0.2.{i + 1}:", line)
        args = shlex.split(line)
        args[1:1] = ["--ssh-command", str(fake_ssh), "--start-timeout", "10"]
        record.unlink(missing_ok=True)
        r = run(args, timeout=60, env=env, cwd=tmp_path)
        where = f"{doc}: {' '.join(words)}\n{r.stderr}"
        assert r.returncode == 1, where
        assert "cannot start the agent on host 192.0.2." in r.stderr, where
        assert "over ssh: ssh: connect to host: Connection refused" in r.stderr, where
        ssh_args = record.read_text()
        assert "-o BatchMode=yes" in ssh_args, ssh_args
        if "-p" in words:
            port = words[words.index("-p") + 1]
            assert f"-p {port} 192.0.2." in ssh_args, ssh_args


def cache_value(name):
    for line in (BUILD_DIR / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


def test_install_puts_horovodrun_beside_hvdrun_and_keeps_another(tmp_path):
    # launcher/'s install script alone: hvdrun and the horovodrun link.
    script = BUILD_DIR / "launcher" / "cmake_install.cmake"
    if "horovodrun" not in script.read_text():
        pytest.skip("this build installs no horovodrun (HVD_HOROVODRUN=OFF, or another "
                    "horovodrun was on PATH when CMake configured it)")
    stage = tmp_path / "stage"
    bin_dir = stage / cache_value("CMAKE_INSTALL_PREFIX").lstrip("/") / "bin"
    r = run(["cmake", "-P", str(script)], timeout=60, env={"DESTDIR": str(stage)})
    assert r.returncode == 0, r.stdout + r.stderr
    link = bin_dir / "horovodrun"
    assert (bin_dir / "hvdrun").is_file() and os.readlink(link) == "hvdrun", r.stdout
    if cache_value("HVD_HOROVODRUN") != "AUTO":
        return
    # Another horovodrun (a real Horovod's) where hvd's would go stays.
    link.unlink()
    link.write_text("#!/bin/sh\necho horovod\n")
    r = run(["cmake", "-P", str(script)], timeout=60, env={"DESTDIR": str(stage)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not link.is_symlink() and link.read_text().endswith("echo horovod\n")
    assert f"Keeping: {link} (not hvd's; -DHVD_HOROVODRUN=ON replaces it)" in r.stdout, r.stdout


def test_horovodrun_runs_a_horovod_script_and_line_as_they_are():
    horovodrun = BUILD_DIR / "bin" / "horovodrun"
    assert horovodrun.is_symlink(), "the build makes bin/horovodrun"
    # A horovodrun line: --gloo is ignored with a note, the threshold is in MB.
    r = run([str(horovodrun), "--gloo", "-np", "2", "--fusion-threshold-mb", "32",
             "/usr/bin/python3", "-c", HOROVOD_SCRIPT], timeout=120, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sum 0 [3.0, 3.0]" in r.stdout and "sum 1 [3.0, 3.0]" in r.stdout, r.stdout


def test_a_worker_without_horovod_gets_the_hint_once(hvdrun):
    r = run([hvdrun, "-np", "2", "/usr/bin/python3", "-c", HOROVOD_SCRIPT], timeout=120, env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    hint = ("hvdrun: hint: the workers cannot import horovod: add --horovod-compat to run a "
            "Horovod script on hvd's Horovod API (or start it as horovodrun)")
    assert r.stderr.count(hint) == 1, r.stderr


def test_a_worker_without_torch_gets_its_interpreter_named_once(hvdrun, tmp_path):
    # A python3 first on PATH that has no torch (here: Debian's without its
    # site packages).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python3"
    python.write_text('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    python.chmod(0o755)
    env = dict(ENV, PATH=f"{bin_dir}:{os.environ['PATH']}")
    r = run([hvdrun, "-np", "2", "python3", "-c", "import torch"], timeout=60, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    hint = (f"hvdrun: hint: the workers ran python3 ({python} here), which cannot import torch: "
            "give hvdrun a Python that has torch and numpy, e.g. /usr/bin/python3 (Debian's "
            "python3-torch)")
    hints = [line for line in r.stderr.splitlines() if line.startswith("hvdrun: hint: ")]
    assert hints == [hint], r.stderr


def test_an_unknown_flag_gets_did_you_mean(hvdrun):
    r = run([hvdrun, "--fusion-treshold-mb", "32", "-np", "1", "/bin/true"], timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("hvdrun: error: The following argument was not expected: "
                                "--fusion-treshold-mb (did you mean --fusion-threshold-mb?)")
    r = run([hvdrun, "-n", "2", "/bin/true"], timeout=30)  # mpirun's spelling
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("hvdrun: error: The following argument was not expected: "
                                "-n (did you mean -np?)")
