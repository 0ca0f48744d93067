"""horovod.torch, served by hvd.torch (see the package docstring of horovod)."""

import sys as _sys

import hvd.torch as _impl
from hvd.torch import *  # noqa: F401,F403
from hvd.torch import __version__  # noqa: F401

# `import horovod.torch.mpi_ops` and friends find hvd's modules.
for _name in ("mpi_ops", "optimizer", "functions", "compression", "sync_batch_norm", "elastic"):
    _sys.modules[f"{__name__}.{_name}"] = getattr(_impl, _name)
for _name in ("state", "sampler"):
    _sys.modules[f"{__name__}.elastic.{_name}"] = getattr(_impl.elastic, _name)
