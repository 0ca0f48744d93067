"""hvd: distributed deep learning without MPI, in the spirit of Horovod.

    import hvd.torch as hvd      # PyTorch (mirrors horovod.torch)
    import hvd.numpy as hvd      # numpy arrays

This top level holds the framework-free core (hvd.common): init, rank,
size, process sets, reduction ops, build queries, the timeline. The package
is pure Python over libhvd.so's C ABI (hvd._lib).
"""

from hvd.common import *  # noqa: F401,F403
from hvd.common import __version__  # noqa: F401
