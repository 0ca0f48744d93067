"""`pip install <checkout>/python` into a fresh venv, as a Horovod user would
(docs/python.md): the venv's `import hvd` is the installed copy, not the
source tree, it carries every module and the opt-in horovod shim, and a
2-rank hvd.torch allreduce runs from the venv's python under hvdrun.

    venv_install.py PYTHON SOURCE_PYTHON_DIR LIBHVD HVDRUN

Offline: --no-build-isolation --no-index, the venv made with
--system-site-packages (Debian's torch, setuptools and wheel). Runs with
PYTHONPATH unset and its working directory outside the checkout.
"""

import os
import subprocess
import sys
import tempfile

python, source, libhvd, hvdrun = sys.argv[1:5]

WORKER = """
import sys, torch
import hvd.torch as hvd
hvd.init()
t = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum)
assert t.tolist() == [3.0] * 4, t
sys.path.insert(0, sys.argv[1])   # opting in to the shim, as PYTHONPATH would
import horovod.torch
assert horovod.torch.allreduce is hvd.allreduce and horovod.torch.size() == 2
print("venv-ok", hvd.rank(), sys.modules["hvd"].__file__)
"""


def run(*argv, env):
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=50)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(argv)}\n{r.stdout}{r.stderr}")
    return r.stdout


def py_files(top):
    return {os.path.relpath(os.path.join(d, f), top)
            for d, _, files in os.walk(top) for f in files if f.endswith(".py")}


with tempfile.TemporaryDirectory(prefix="hvd-venv-") as tmp:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "HVD_"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", HOME=tmp)
    os.chdir(tmp)
    venv = os.path.join(tmp, "venv")
    vpy = os.path.join(venv, "bin", "python")
    run(python, "-m", "venv", "--system-site-packages", venv, env=env)
    run(vpy, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
        "--no-cache-dir", source, env=env)
    site = run(vpy, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", env=env).strip()

    env["HVD_LIBRARY"] = libhvd
    where = run(vpy, "-c", "import hvd, hvd.torch; print(hvd.__file__)", env=env).strip()
    assert where == os.path.join(site, "hvd", "__init__.py"), f"import hvd gave {where}, not {site}"
    installed = py_files(os.path.join(site, "hvd"))
    missing = (py_files(os.path.join(source, "hvd")) |
               {os.path.join("_compat", f) for f in py_files(os.path.join(source, "compat"))})
    missing -= installed
    assert not missing, f"pip install left out {sorted(missing)} (python/pyproject.toml packages)"
    shim = run(vpy, "-m", "hvd.horovod_compat", env=env).strip()
    assert shim == os.path.join(site, "hvd", "_compat"), f"hvd.horovod_compat gave {shim}"

    out = run(hvdrun, "-np", "2", vpy, "-c", WORKER, shim, env=env)
    for rank in (0, 1):
        assert f"[{rank}]<stdout>:venv-ok {rank} {where}" in out, out
    print(f"ok: hvd pip-installed into {site}; 2-rank allreduce from the venv")
