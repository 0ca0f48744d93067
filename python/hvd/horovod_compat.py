"""Where the opt-in `horovod` shim is (``import horovod.torch`` gives
hvd.torch): the folder to put first on PYTHONPATH, for launchers other than
``hvdrun --horovod-compat`` (which adds its own copy)::

    PYTHONPATH="$(python -m hvd.horovod_compat)" torchrun ... train.py

It is never on sys.path by itself, so a real Horovod is not shadowed.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def path():
    """The shim's folder: hvd/_compat (pip install), ../compat (source and
    build trees) or <prefix>/share/hvd/python-compat (cmake --install)."""
    candidates = [os.path.join(_HERE, "_compat"), os.path.join(_HERE, "..", "compat"),
                  os.path.join(_HERE, "..", "..", "..", "..", "share", "hvd", "python-compat")]
    for folder in candidates:
        if os.path.isdir(os.path.join(folder, "horovod")):
            return os.path.normpath(folder)
    raise FileNotFoundError("hvd: the horovod shim is not installed; looked in " +
                            ", ".join(os.path.normpath(c) for c in candidates))


if __name__ == "__main__":
    print(path())
