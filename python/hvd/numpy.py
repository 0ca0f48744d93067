"""Collectives on numpy arrays, for framework-free code.

    import numpy as np
    import hvd.numpy as hvd
    hvd.init()
    total = hvd.allreduce(np.ones(4, np.float32), op=hvd.Sum)

The calls are hvd's collectives (hvd._collectives.ops) bound to numpy
arrays: op defaults to Average, root ranks are global ranks; results are new
arrays except for the in-place variants (allreduce_, broadcast_). dtypes:
uint8, int8, int16, int32, int64, float16, float32, float64, bool.
"""

from hvd._collectives.ops import Collectives as _Collectives
from hvd._collectives.ops import barrier, join  # noqa: F401
from hvd._numpy_framework import NumpyFramework as _NumpyFramework
from hvd.common import *  # noqa: F401,F403  (init, rank, Sum, ProcessSet, ...)
from hvd.common import global_process_set, synchronize, poll  # noqa: F401

_ops = _Collectives(_NumpyFramework())

allreduce_async = _ops.allreduce_async
allreduce = _ops.allreduce
allreduce_async_ = _ops.allreduce_async_
allreduce_ = _ops.allreduce_
grouped_allreduce_async = _ops.grouped_allreduce_async
grouped_allreduce = _ops.grouped_allreduce
allgather_async = _ops.allgather_async
allgather = _ops.allgather
grouped_allgather = _ops.grouped_allgather
broadcast_async = _ops.broadcast_async
broadcast = _ops.broadcast
broadcast_async_ = _ops.broadcast_async_
broadcast_ = _ops.broadcast_
alltoall_async = _ops.alltoall_async
alltoall = _ops.alltoall
reducescatter_async = _ops.reducescatter_async
reducescatter = _ops.reducescatter
grouped_reducescatter = _ops.grouped_reducescatter
