"""hvd.torch's allgather calls, single and grouped, with autograd Functions.

The gradient of an allgather is, as in Horovod, the Average over the ranks
of the gradient, this rank's rows (each rank's incoming gradient is taken
as an estimate of the same quantity).
"""

import torch

from hvd import numpy as _hnp
from hvd.common import Average, global_process_set
from hvd.torch._allreduce import allreduce, grouped_allreduce
from hvd.torch._framework import collectives as _ops
from hvd.torch._numpy_arrays import numpy_arrays_go_to


@numpy_arrays_go_to(_hnp.allgather_async)
def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather; synchronize() returns the concatenation."""
    return _ops.allgather_async(tensor, name, process_set)


class HorovodAllgather(torch.autograd.Function):
    """Autograd-aware allgather."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0] if tensor.dim() > 0 else 0
        ctx.process_set = process_set
        return _ops.allgather(tensor, name, process_set)

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64),
                         process_set=ctx.process_set)
        r = ctx.process_set.rank()
        offset = int(dims[:r].sum()) if r > 0 else 0
        return grad_reduced.narrow(0, offset, ctx.dim), None, None


@numpy_arrays_go_to(_hnp.allgather)
def allgather(tensor, name=None, process_set=global_process_set):
    """The tensors of every rank of the set concatenated along the first
    dimension (which may differ between ranks), in rank order; autograd-aware."""
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts one allgather of several tensors, negotiated together;
    synchronize() returns the list of concatenations."""
    return _ops.grouped_allgather_async(tensors, name, process_set)


class HorovodGroupedAllgather(torch.autograd.Function):
    """Autograd-aware grouped allgather."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(_ops.grouped_allgather(tensors, name, process_set))

    @staticmethod
    def backward(ctx, *grad_outputs):
        reduced = grouped_allreduce(list(grad_outputs), op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64),
                         process_set=ctx.process_set)
        r = ctx.process_set.rank()
        grads = []
        for k, g in enumerate(reduced):
            offset = int(dims[:r, k].sum()) if r > 0 else 0
            grads.append(g.narrow(0, offset, ctx.dims[k]))
        return (None, None, *grads)


@numpy_arrays_go_to(_hnp.grouped_allgather)
def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgather of several tensors as one negotiated group; autograd-aware."""
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))
