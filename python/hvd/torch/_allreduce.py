"""hvd.torch's allreduce calls: single, grouped and sparse, with Horovod's
signatures (``average=``, ``compression=``) and autograd Functions.

The gradient of an allreduce is the allreduce of the gradient with the same
op and factors. Only the calls returning a new tensor are autograd-aware,
as in Horovod.
"""

import torch

from hvd import numpy as _hnp
from hvd.common import (Average, global_process_set, handle_average_backwards_compatibility,
                        synchronize)
from hvd.torch._framework import collectives as _ops
from hvd.torch._numpy_arrays import numpy_arrays_go_to
from hvd.torch.compression import Compression


def _needs_autograd(tensors):
    """Whether autograd must record the op (some input requires grad and
    grad mode is on); otherwise the op runs without a Function (the same
    result, a few microseconds less per call)."""
    return torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in tensors)


def save_reduction(ctx, op, prescale_factor, postscale_factor, process_set):
    """Keeps a reduction's arguments on an autograd Function's ctx for its
    backward (allreduce, reducescatter)."""
    ctx.op = op
    ctx.prescale_factor = prescale_factor
    ctx.postscale_factor = postscale_factor
    ctx.process_set = process_set


# ---- allreduce -------------------------------------------------------------------

@numpy_arrays_go_to(_hnp.allreduce_async)
def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an allreduce into a new tensor; synchronize() returns it."""
    op = handle_average_backwards_compatibility(op, average)
    return _ops.allreduce_async(tensor, op, name, prescale_factor, postscale_factor,
                                process_set)


class HorovodAllreduce(torch.autograd.Function):
    """Autograd-aware allreduce."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        save_reduction(ctx, op, prescale_factor, postscale_factor, process_set)
        return _ops.allreduce(tensor, op, name, prescale_factor, postscale_factor, process_set)

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None


@numpy_arrays_go_to(_hnp.allreduce)
def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """The reduction (default: Average) of ``tensor`` over the ranks of the
    set, as a new tensor; autograd-aware."""
    op = handle_average_backwards_compatibility(op, average)
    compressed, cctx = compression.compress(tensor)
    if _needs_autograd((compressed,)):
        reduced = HorovodAllreduce.apply(compressed, name, op, prescale_factor, postscale_factor,
                                         process_set)
    else:
        reduced = _ops.allreduce(compressed, op, name, prescale_factor, postscale_factor,
                                 process_set)
    return compression.decompress(reduced, cctx)


@numpy_arrays_go_to(_hnp.allreduce_async_)
def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place allreduce; synchronize() returns ``tensor``."""
    op = handle_average_backwards_compatibility(op, average)
    return _ops.allreduce_async_(tensor, op, name, prescale_factor, postscale_factor,
                                 process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """In place: ``tensor`` receives the reduction (not autograd-aware)."""
    return allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                            process_set).wait()


# ---- grouped allreduce -----------------------------------------------------------

def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts one allreduce of several tensors, negotiated and completed
    together; synchronize() returns the list of new tensors."""
    op = handle_average_backwards_compatibility(op, average)
    return _ops.grouped_allreduce_async(tensors, op, name, prescale_factor, postscale_factor,
                                        process_set)


class HorovodGroupedAllreduce(torch.autograd.Function):
    """Autograd-aware grouped allreduce."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        save_reduction(ctx, op, prescale_factor, postscale_factor, process_set)
        return tuple(_ops.grouped_allreduce(tensors, op, name, prescale_factor, postscale_factor,
                                            process_set))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None, None, None, None, None, *grads)


@numpy_arrays_go_to(_hnp.grouped_allreduce)
def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Allreduce of several tensors as one negotiated group; autograd-aware."""
    op = handle_average_backwards_compatibility(op, average)
    compressed, cctxs = zip(*[compression.compress(t) for t in tensors]) if tensors else ((), ())
    if _needs_autograd(compressed):
        reduced = HorovodGroupedAllreduce.apply(name, op, prescale_factor, postscale_factor,
                                                process_set, *compressed)
    else:
        reduced = _ops.grouped_allreduce(compressed, op, name, prescale_factor,
                                         postscale_factor, process_set)
    return [compression.decompress(t, c) for t, c in zip(reduced, cctxs)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place grouped allreduce; synchronize() returns ``tensors``."""
    op = handle_average_backwards_compatibility(op, average)
    return _ops.grouped_allreduce_async_(tensors, op, name, prescale_factor, postscale_factor,
                                         process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """In place: each of ``tensors`` receives its reduction."""
    return grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                    postscale_factor, process_set).wait()


# ---- sparse allreduce (allgather of indices and values, as Horovod) -----------------

def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Allreduce of a sparse COO tensor through allgathers of its indices and
    values. Returns a handle (a function) for synchronize()."""
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    indices = _ops.allgather_async(t._indices().transpose(0, 1).contiguous(),
                                   name=f"{name}.indices" if name else None,
                                   process_set=process_set)
    values = _ops.allgather_async(t._values(), name=f"{name}.values" if name else None,
                                  process_set=process_set)

    def handle():
        v = synchronize(values)
        i = synchronize(indices)
        if op == Average:
            v = v / process_set.size()
        if i.dim() == 0 or v.dim() == 0:
            return t.new().resize_as_(t)
        return torch.sparse_coo_tensor(i.transpose(0, 1), v, t.size()).coalesce()

    return handle
