"""Collectives on torch tensors: the names of horovod/torch/mpi_ops.py.

Naming, as in Horovod: ``op`` returns a new tensor and is autograd-aware;
``op_`` works in place; ``op_async`` / ``op_async_`` return a handle for
poll() / synchronize(). Reductions default to Average. ``root_rank`` is a
global rank, also on process sets. CPU tensors run on the CPU transport;
CUDA tensors are device ops (their device index, ordered on the device's
current stream) on the GPU transport (HVD_GPU_TRANSPORT: nccl, or gloo
staged through pinned host memory; docs/gpu.md), their outputs allocated on
the same device. Non-contiguous tensors are copied. Tensors are kept alive
until their op is done.
Numpy arrays passed to these calls go to hvd.numpy.

The collectives themselves are hvd._collectives, bound to torch tensors in
hvd.torch._framework; each op's Horovod signature and autograd Function is
in its own module (_allreduce, _allgather, _broadcast, _alltoall,
_reducescatter).

Gradients, exactly as horovod.torch computes them (its convention: each
rank's incoming gradient is an estimate of the same quantity, so gathered
gradients are averaged, not summed):
    allreduce      -> allreduce of the gradient with the same op and factors
    allgather      -> the Average over ranks of the gradient, this rank's rows
    broadcast      -> the Average over ranks of the gradient on the root, 0 elsewhere
    alltoall       -> alltoall of the gradient back with the received splits
    reducescatter  -> allgather of the gradient, times size() for Sum (as is
                      for Average), times the scale factors
"""

import torch  # noqa: F401  (as in horovod.torch.mpi_ops)

from hvd._collectives import ops as _collectives
from hvd._collectives.ops import barrier  # noqa: F401
from hvd._lib import C  # noqa: F401
from hvd.common import (Average, Sum, HorovodInternalError, global_process_set,  # noqa: F401
                        handle_average_backwards_compatibility, poll, synchronize)
from hvd.torch.compression import Compression  # noqa: F401
from hvd.torch._allreduce import (  # noqa: F401
    HorovodAllreduce, HorovodGroupedAllreduce, allreduce, allreduce_, allreduce_async,
    allreduce_async_, grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
    grouped_allreduce_async_, sparse_allreduce_async)
from hvd.torch._allgather import (  # noqa: F401
    HorovodAllgather, HorovodGroupedAllgather, allgather, allgather_async, grouped_allgather,
    grouped_allgather_async)
from hvd.torch._broadcast import (  # noqa: F401
    HorovodBroadcast, broadcast, broadcast_, broadcast_async, broadcast_async_)
from hvd.torch._alltoall import HorovodAlltoall, alltoall, alltoall_async  # noqa: F401
from hvd.torch._reducescatter import (  # noqa: F401
    HorovodGroupedReducescatter, HorovodReducescatter, grouped_reducescatter,
    grouped_reducescatter_async, reducescatter, reducescatter_async)


def join(device=-1, process_set=global_process_set):
    """This rank has no more data: until every rank of the set joined, it
    takes part in the others' allreduces with zeros (so they complete; an
    Average still divides by the set's size). Returns the rank that joined
    last. ``device`` is accepted for Horovod compatibility."""
    return _collectives.join(process_set)
