"""deploy/bundle.sh: a build packed with the shared libraries `ldd` lists, for
the GPU machines that have no apt. The bundle has a build folder's layout;
from it (env.sh sourced, nothing else of the build on any path) every program
and library finds all it needs in the bundle or the base system, and a
2-rank job runs with the bundle's hvdrun, agent, Python package and libhvd."""
import os
import pathlib
import re
import subprocess
import sys

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = str(SOURCE / "deploy" / "bundle.sh")
# What bundle.sh leaves to the target's base system (and libnccl: pip's).
BASE = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|"
                  r"libstdc\+\+|libgcc_s|libssl|libcrypto|libz|libcuda|libnccl)\.")


def bundled(tmp_path):
    bundle = tmp_path / "bundle"
    r = run(["bash", SCRIPT, str(BUILD_DIR), str(bundle)], timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.match(r"bundle\.sh: .*: \d+ programs, \d+ hvd libraries, \d+ dependencies", r.stdout)
    return bundle


def in_bundle(bundle, command, timeout=120):
    """Runs `command` under bash with only the bundle's env.sh for hvd."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(["bash", "-c", f". {bundle}/env.sh && {command}"], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_every_library_resolves_inside_the_bundle_or_the_base_system(tmp_path):
    bundle = bundled(tmp_path)
    assert (bundle / "bin" / "hvdrun").is_file() and (bundle / "bin" / "hvd-agent").is_file()
    assert (bundle / "lib" / "libhvd.so").is_file()
    assert (bundle / "python" / "hvd" / "__init__.py").is_file()
    files = [*(bundle / "bin").iterdir(), *(bundle / "lib").glob("*.so")]
    r = in_bundle(bundle, "for f in " + " ".join(map(str, files)) + "; do ldd $f; done")
    assert r.returncode == 0, r.stderr
    outside = set()
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if not m:
            continue
        name, path = m.groups()
        assert path != "not", f"{name} not found: {line}"
        if not path.startswith(str(bundle)) and not BASE.match(name):
            outside.add(f"{name} => {path}")
    assert not outside, f"resolved outside the bundle: {sorted(outside)}"


def test_a_job_runs_from_the_bundle(tmp_path):
    bundle = bundled(tmp_path)
    worker = ("import numpy, hvd.numpy as hvd; hvd.init(); "
              "assert hvd.__file__.startswith('" + str(bundle) + "'), hvd.__file__; "
              "x = numpy.full(4, hvd.rank() + 1.0, dtype=numpy.float32); "
              "print('sum', hvd.allreduce(x, op=hvd.Sum).tolist()); hvd.shutdown()")
    r = in_bundle(bundle, f"hvdrun -np 2 {sys.executable} -c \"{worker}\"")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("sum [3.0, 3.0, 3.0, 3.0]") == 2, r.stdout
    check = in_bundle(bundle, "command -v hvdrun && hvdrun --check-build")
    assert check.stdout.startswith(f"{bundle}/bin/hvdrun\n"), check.stdout
    assert "libhvd.so" in check.stdout or "C ABI" in check.stdout, check.stdout


def test_a_folder_that_is_not_a_build_is_refused(tmp_path):
    r = run(["bash", SCRIPT, str(tmp_path), str(tmp_path / "b")], timeout=30)
    assert r.returncode == 2
    assert r.stderr == (f"bundle.sh: {tmp_path} is not a build folder (no bin/hvdrun or "
                        "lib/libhvd.so): build first\n")
    assert not (tmp_path / "b").exists()
