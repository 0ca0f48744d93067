"""hvd.torch's alltoall calls, with the autograd Function.

The gradient of an alltoall is the alltoall of the gradient back, with the
received splits.
"""

import torch

from hvd import numpy as _hnp
from hvd.common import global_process_set
from hvd.torch._framework import collectives as _ops
from hvd.torch._numpy_arrays import numpy_arrays_go_to


@numpy_arrays_go_to(_hnp.alltoall_async)
def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall; synchronize() returns (tensor, received_splits)."""
    return _ops.alltoall_async(tensor, splits, name, process_set)


class HorovodAlltoall(torch.autograd.Function):
    """Autograd-aware alltoall."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = _ops.alltoall_async(tensor, splits, name, process_set).wait()
        ctx.process_set = process_set
        ctx.received_splits = received_splits
        if splits is None:
            return output
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, *dead_gradients):
        grad, _ = alltoall(grad_output, splits=ctx.received_splits, process_set=ctx.process_set)
        return grad, None, None, None


@numpy_arrays_go_to(_hnp.alltoall)
def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends ``splits[i]`` rows of ``tensor`` (equal parts when None) to rank i
    of the set and returns the rows received, in rank order. With ``splits``,
    returns (tensor, received_splits), as Horovod does; autograd-aware."""
    return HorovodAlltoall.apply(tensor, splits, name, process_set)
