"""hvd.torch's reducescatter calls, single and grouped, with Horovod's
signatures (``compression=``, name before op) and autograd Functions.

The gradient of a reducescatter is the allgather of the gradient, times
size() for Sum (as is for Average), times the scale factors.
"""

import torch

from hvd import numpy as _hnp
from hvd.common import Average, Sum, global_process_set
from hvd.torch._allgather import allgather, grouped_allgather
from hvd.torch._allreduce import save_reduction
from hvd.torch._framework import collectives as _ops
from hvd.torch._numpy_arrays import numpy_arrays_go_to
from hvd.torch.compression import Compression


@numpy_arrays_go_to(_hnp.reducescatter_async)
def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter; synchronize() returns this rank's part."""
    return _ops.reducescatter_async(tensor, op, name, process_set, prescale_factor,
                                    postscale_factor)


def _reducescatter_scale(ctx):
    """What the allgathered gradient of a reducescatter is multiplied by."""
    scale = ctx.prescale_factor * ctx.postscale_factor
    if ctx.op == Sum:
        scale *= ctx.process_set.size()
    return scale


def _reducescatter_grad(grad_output, ctx):
    grad = allgather(grad_output, process_set=ctx.process_set)
    scale = _reducescatter_scale(ctx)
    return grad * scale if scale != 1.0 else grad


class HorovodReducescatter(torch.autograd.Function):
    """Autograd-aware reducescatter."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        save_reduction(ctx, op, prescale_factor, postscale_factor, process_set)
        return _ops.reducescatter(tensor, op, name, process_set, prescale_factor,
                                  postscale_factor)

    @staticmethod
    def backward(ctx, grad_output):
        return _reducescatter_grad(grad_output, ctx), None, None, None, None, None


@numpy_arrays_go_to(_hnp.reducescatter)
def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces (default: Average) over the ranks of the set and gives rank i
    its part of the first dimension (the first rows % size ranks get one row
    more); autograd-aware."""
    compressed, cctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                     postscale_factor)
    return compression.decompress(out, cctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Starts one reducescatter of several tensors, negotiated together;
    synchronize() returns the list of this rank's parts."""
    return _ops.grouped_reducescatter_async(tensors, op, name, process_set, prescale_factor,
                                            postscale_factor)


class HorovodGroupedReducescatter(torch.autograd.Function):
    """Autograd-aware grouped reducescatter."""

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        save_reduction(ctx, op, prescale_factor, postscale_factor, process_set)
        return tuple(_ops.grouped_reducescatter(tensors, op, name, process_set,
                                                prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        scale = _reducescatter_scale(ctx)
        return (None, None, None, None, None, *[g * scale if scale != 1.0 else g for g in grads])


@numpy_arrays_go_to(_hnp.grouped_reducescatter)
def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Reducescatter of several tensors as one negotiated group; autograd-aware."""
    compressed, cctxs = zip(*[compression.compress(t) for t in tensors]) if tensors else ((), ())
    out = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                            postscale_factor, *compressed)
    return [compression.decompress(t, c) for t, c in zip(out, cctxs)]
