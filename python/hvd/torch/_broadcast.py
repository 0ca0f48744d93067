"""hvd.torch's broadcast calls, with the autograd Function.

The gradient of a broadcast is, as in Horovod, the Average over the ranks
of the gradient on the root, zeros elsewhere.
"""

import torch

from hvd import numpy as _hnp
from hvd.common import Average, global_process_set
from hvd.torch._allreduce import allreduce
from hvd.torch._framework import collectives as _ops
from hvd.torch._numpy_arrays import numpy_arrays_go_to


@numpy_arrays_go_to(_hnp.broadcast_async)
def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast into a new tensor; synchronize() returns it."""
    return _ops.broadcast_async(tensor, root_rank, name, process_set)


class HorovodBroadcast(torch.autograd.Function):
    """Autograd-aware broadcast."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return _ops.broadcast(tensor, root_rank, name, process_set)

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if ctx.process_set.set_rank_of(ctx.root_rank) != ctx.process_set.rank():
            grad_reduced = grad_reduced * 0
        return grad_reduced, None, None, None


@numpy_arrays_go_to(_hnp.broadcast)
def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """``root_rank``'s tensor (a global rank) as a new tensor on every rank
    of the set; autograd-aware."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


@numpy_arrays_go_to(_hnp.broadcast_async_)
def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast; synchronize() returns ``tensor``."""
    return _ops.broadcast_async_(tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In place: ``tensor`` receives ``root_rank``'s values."""
    return broadcast_async_(tensor, root_rank, name, process_set).wait()
