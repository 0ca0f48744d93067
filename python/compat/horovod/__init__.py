"""Horovod compatibility shim: ``import horovod.torch as hvd`` gets hvd.torch.

Only on sys.path when asked for (PYTHONPATH=<repo>/python/compat, or
hvdrun's --horovod-compat once the launcher has it), so a real Horovod
installation is never shadowed by default.
"""

from hvd.common import __version__  # noqa: F401
