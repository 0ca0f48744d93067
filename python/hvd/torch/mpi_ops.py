"""Collectives on torch tensors, mirroring horovod/torch/mpi_ops.py.

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

import numpy as _np
import torch

from hvd import _core
from hvd import numpy as _hnp
from hvd._checks import member_name as _member
from hvd._lib import C
from hvd.common import (Average, Sum, HorovodInternalError, global_process_set,  # noqa: F401
                        handle_average_backwards_compatibility, poll, synchronize)
from hvd.torch.compression import Compression

_DTYPES = {
    torch.uint8: C.UINT8,
    torch.int8: C.INT8,
    torch.int16: C.INT16,
    torch.int32: C.INT32,
    torch.int64: C.INT64,
    torch.float16: C.FLOAT16,
    torch.bfloat16: C.BFLOAT16,
    torch.float32: C.FLOAT32,
    torch.float64: C.FLOAT64,
    torch.bool: C.BOOL,
}


def _cuda_stream(t):
    """The current CUDA stream of t's device (cudaStream_t as an int), for
    the op to be ordered on; None for CPU tensors, so CPU-only torch and
    torch 1.13 never touch torch.cuda."""
    if t.device.type != "cuda":
        return None
    return torch.cuda.current_stream(t.device).cuda_stream or None


def _ready_event(t):
    """(event, cudaEvent_t as an int) recorded now on t's current stream: the
    device's communication stream waits for it on the GPU, so the op starts
    as soon as t is ready and overlaps the compute queued after it (as
    torch's ProcessGroupNCCL does). (None, None) for CPU tensors; a torch
    without Event.cuda_event gives no pointer, and the engine then waits
    for the stream's work as of the op's batch."""
    if t.device.type != "cuda":
        return None, None
    event = torch.cuda.Event()
    event.record(torch.cuda.current_stream(t.device))
    return event, getattr(event, "cuda_event", None) or None


class _TorchKind:
    """The adapter of hvd._core for torch tensors."""

    @staticmethod
    def prepare(t):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"hvd.torch expects a torch.Tensor, not {type(t).__name__}")
        # Unsupported tensor types are ValueErrors, as in horovod.torch
        # ("Tensor type ... is not supported").
        if t.dtype not in _DTYPES:
            raise ValueError(f"Tensor type {t.dtype} is not supported by hvd; supported: "
                             + ", ".join(str(d) for d in _DTYPES))
        if t.layout != torch.strided:
            raise ValueError(f"hvd needs dense tensors, not {t.layout} "
                             "(sparse gradients: sparse_allreduce_async)")
        if t.device.type not in ("cpu", "cuda"):
            raise ValueError(f"Tensors on device {t.device} are not supported (CPU and CUDA "
                             "tensors only)")
        return t if t.is_contiguous() else t.contiguous()

    @staticmethod
    def info(t):
        device = t.device.index if t.device.type == "cuda" else C.DEVICE_CPU
        return t.data_ptr(), tuple(t.shape), _DTYPES[t.dtype], device

    @staticmethod
    def stream(t):
        return _cuda_stream(t)

    @staticmethod
    def ready_event(t):
        return _ready_event(t)

    @staticmethod
    def empty(shape, like):
        return torch.empty(shape, dtype=like.dtype, device=like.device)

    @staticmethod
    def wrap(buffer, shape, like):
        return torch.frombuffer(buffer, dtype=like.dtype).reshape(shape)

    @staticmethod
    def nbytes(t):
        return t.numel() * t.element_size()

    @staticmethod
    def element_size(t):
        return t.element_size()

    @staticmethod
    def copy_(dst, src):
        with torch.no_grad():
            dst.copy_(src)

    @staticmethod
    def int_array(values, like):
        return torch.tensor(values, dtype=torch.int32, device=like.device)

    @staticmethod
    def to_list(values):
        if isinstance(values, torch.Tensor):
            return values.reshape(-1).tolist()
        return list(values)


_kind = _TorchKind()


def _is_numpy(x):
    return isinstance(x, _np.ndarray)


def _needs_autograd(tensors):
    """Whether autograd must record the op (some input requires grad and
    grad mode is on); otherwise the op runs without a Function (the same
    result, a few microseconds less per call)."""
    return torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in tensors)


# ---- allreduce ----------------------------------------------------------------

def _allreduce_async(tensor, output_in_place, name, op, prescale_factor, postscale_factor,
                     process_set):
    return _core.submit(_core.prep_allreduce(_kind, tensor, output_in_place, name, op,
                                             prescale_factor, postscale_factor, process_set),
                        "allreduce")


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an allreduce into a new tensor; synchronize() returns it."""
    op = handle_average_backwards_compatibility(op, average)
    if _is_numpy(tensor):
        return _hnp.allreduce_async(tensor, op, name, prescale_factor, postscale_factor,
                                    process_set)
    return _allreduce_async(tensor, False, name, op, prescale_factor, postscale_factor,
                            process_set)


class HorovodAllreduce(torch.autograd.Function):
    """Autograd-aware allreduce."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return _allreduce_async(tensor, False, name, op, prescale_factor, postscale_factor,
                                process_set).wait()

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """The reduction (default: Average) of ``tensor`` over the ranks of the
    set, as a new tensor; autograd-aware."""
    op = handle_average_backwards_compatibility(op, average)
    if _is_numpy(tensor):
        return _hnp.allreduce(tensor, op, name, prescale_factor, postscale_factor, process_set)
    compressed, cctx = compression.compress(tensor)
    if _needs_autograd((compressed,)):
        reduced = HorovodAllreduce.apply(compressed, name, op, prescale_factor, postscale_factor,
                                         process_set)
    else:
        reduced = _allreduce_async(compressed, False, name, op, prescale_factor,
                                   postscale_factor, process_set).wait()
    return compression.decompress(reduced, cctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place allreduce; synchronize() returns ``tensor``."""
    op = handle_average_backwards_compatibility(op, average)
    if _is_numpy(tensor):
        return _hnp.allreduce_async_(tensor, op, name, prescale_factor, postscale_factor,
                                     process_set)
    return _allreduce_async(tensor, True, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """In place: ``tensor`` receives the reduction (not autograd-aware)."""
    return allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                            process_set).wait()


# ---- grouped allreduce ------------------------------------------------------------

def _grouped_allreduce_async(tensors, in_place, name, op, prescale_factor, postscale_factor,
                             process_set):
    preps = [_core.prep_allreduce(_kind, t, in_place, _member(name, i), op, prescale_factor,
                                  postscale_factor, process_set) for i, t in enumerate(tensors)]
    return _core.submit_group(preps, "grouped_allreduce")


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts one allreduce of several tensors, negotiated and completed
    together; synchronize() returns the list of new tensors."""
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(tensors, False, name, op, prescale_factor, postscale_factor,
                                    process_set)


class HorovodGroupedAllreduce(torch.autograd.Function):
    """Autograd-aware grouped allreduce."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return tuple(_grouped_allreduce_async(tensors, False, name, op, prescale_factor,
                                              postscale_factor, process_set).wait())

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Allreduce of several tensors as one negotiated group; autograd-aware."""
    op = handle_average_backwards_compatibility(op, average)
    if tensors and all(_is_numpy(t) for t in tensors):
        return _hnp.grouped_allreduce(tensors, op, name, prescale_factor, postscale_factor,
                                      process_set)
    compressed, cctxs = zip(*[compression.compress(t) for t in tensors]) if tensors else ((), ())
    if _needs_autograd(compressed):
        reduced = HorovodGroupedAllreduce.apply(name, op, prescale_factor, postscale_factor,
                                                process_set, *compressed)
    else:
        reduced = _grouped_allreduce_async(compressed, False, name, op, prescale_factor,
                                           postscale_factor, process_set).wait()
    return [compression.decompress(t, c) for t, c in zip(reduced, cctxs)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(tensors, True, name, op, prescale_factor, postscale_factor,
                                    process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                    postscale_factor, process_set).wait()


# ---- sparse allreduce (allgather of indices and values, as Horovod) ---------------

def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Allreduce of a sparse COO tensor through allgathers of its indices and
    values. Returns a handle (a function) for synchronize()."""
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    indices = allgather_async(t._indices().transpose(0, 1).contiguous(),
                              name=f"{name}.indices" if name else None, process_set=process_set)
    values = allgather_async(t._values(), name=f"{name}.values" if name else None,
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


# ---- allgather ---------------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather; synchronize() returns the concatenation."""
    if _is_numpy(tensor):
        return _hnp.allgather_async(tensor, name, process_set)
    return _core.submit(_core.prep_allgather(_kind, tensor, name, process_set), "allgather")


class HorovodAllgather(torch.autograd.Function):
    """Autograd-aware allgather."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0] if tensor.dim() > 0 else 0
        ctx.process_set = process_set
        return allgather_async(tensor, name, process_set).wait()

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64),
                         process_set=ctx.process_set)
        r = ctx.process_set.rank()
        offset = int(dims[:r].sum()) if r > 0 else 0
        return grad_reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """The tensors of every rank of the set concatenated along the first
    dimension (which may differ between ranks), in rank order; autograd-aware."""
    if _is_numpy(tensor):
        return _hnp.allgather(tensor, name, process_set)
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    preps = [_core.prep_allgather(_kind, t, _member(name, i), process_set)
             for i, t in enumerate(tensors)]
    return _core.submit_group(preps, "grouped_allgather")


class HorovodGroupedAllgather(torch.autograd.Function):
    """Autograd-aware grouped allgather."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(grouped_allgather_async(tensors, name, process_set).wait())

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


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgather of several tensors as one negotiated group; autograd-aware."""
    if tensors and all(_is_numpy(t) for t in tensors):
        return _hnp.grouped_allgather(tensors, name, process_set)
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# ---- broadcast ---------------------------------------------------------------------

def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast into a new tensor; synchronize() returns it."""
    if _is_numpy(tensor):
        return _hnp.broadcast_async(tensor, root_rank, name, process_set)
    return _core.submit(_core.prep_broadcast(_kind, tensor, False, root_rank, name, process_set),
                        "broadcast")


class HorovodBroadcast(torch.autograd.Function):
    """Autograd-aware broadcast."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return broadcast_async(tensor, root_rank, name, process_set).wait()

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if ctx.process_set.set_rank_of(ctx.root_rank) != ctx.process_set.rank():
            grad_reduced = grad_reduced * 0
        return grad_reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """``root_rank``'s tensor (a global rank) as a new tensor on every rank
    of the set; autograd-aware."""
    if _is_numpy(tensor):
        return _hnp.broadcast(tensor, root_rank, name, process_set)
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast; synchronize() returns ``tensor``."""
    if _is_numpy(tensor):
        return _hnp.broadcast_async_(tensor, root_rank, name, process_set)
    return _core.submit(_core.prep_broadcast(_kind, tensor, True, root_rank, name, process_set),
                        "broadcast")


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In place: ``tensor`` receives ``root_rank``'s values."""
    return broadcast_async_(tensor, root_rank, name, process_set).wait()


# ---- alltoall ----------------------------------------------------------------------

def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall; synchronize() returns (tensor, received_splits)."""
    if _is_numpy(tensor):
        return _hnp.alltoall_async(tensor, splits, name, process_set)
    return _core.submit(_core.prep_alltoall(_kind, tensor, splits, name, process_set),
                        "alltoall")


class HorovodAlltoall(torch.autograd.Function):
    """Autograd-aware alltoall."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = alltoall_async(tensor, splits, name, process_set).wait()
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


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends ``splits[i]`` rows of ``tensor`` (equal parts when None) to rank i
    of the set and returns the rows received, in rank order. With ``splits``,
    returns (tensor, received_splits), as Horovod does; autograd-aware."""
    if _is_numpy(tensor):
        return _hnp.alltoall(tensor, splits, name, process_set)
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# ---- reducescatter -------------------------------------------------------------------

def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter; synchronize() returns this rank's part."""
    if _is_numpy(tensor):
        return _hnp.reducescatter_async(tensor, op, name, process_set, prescale_factor,
                                        postscale_factor)
    return _core.submit(_core.prep_reducescatter(_kind, tensor, name, op, prescale_factor,
                                                 postscale_factor, process_set),
                        "reducescatter")


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
        ctx.op = op
        ctx.process_set = process_set
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        return reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                   postscale_factor).wait()

    @staticmethod
    def backward(ctx, grad_output):
        return _reducescatter_grad(grad_output, ctx), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces (default: Average) over the ranks of the set and gives rank i
    its part of the first dimension (the first rows % size ranks get one row
    more); autograd-aware."""
    if _is_numpy(tensor):
        return _hnp.reducescatter(tensor, op, name, process_set, prescale_factor,
                                  postscale_factor)
    compressed, cctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                     postscale_factor)
    return compression.decompress(out, cctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    preps = [_core.prep_reducescatter(_kind, t, _member(name, i), op, prescale_factor,
                                      postscale_factor, process_set)
             for i, t in enumerate(tensors)]
    return _core.submit_group(preps, "grouped_reducescatter")


class HorovodGroupedReducescatter(torch.autograd.Function):
    """Autograd-aware grouped reducescatter."""

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op = op
        ctx.process_set = process_set
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        return tuple(grouped_reducescatter_async(tensors, name, op, process_set,
                                                 prescale_factor, postscale_factor).wait())

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        scale = _reducescatter_scale(ctx)
        return (None, None, None, None, None, *[g * scale if scale != 1.0 else g for g in grads])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Reducescatter of several tensors as one negotiated group; autograd-aware."""
    if tensors and all(_is_numpy(t) for t in tensors):
        return _hnp.grouped_reducescatter(tensors, op, name, process_set, prescale_factor,
                                          postscale_factor)
    compressed, cctxs = zip(*[compression.compress(t) for t in tensors]) if tensors else ((), ())
    out = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                            postscale_factor, *compressed)
    return [compression.decompress(t, c) for t, c in zip(out, cctxs)]


# ---- barrier, join -----------------------------------------------------------------------

def barrier(process_set=global_process_set):
    """Returns once every rank of the set called barrier()."""
    _core.barrier(process_set)


def join(device=-1, process_set=global_process_set):
    """This rank has no more data: until every rank of the set joined, it
    takes part in the others' allreduces with zeros (so they complete; an
    Average still divides by the set's size). Returns the rank that joined
    last. ``device`` is accepted for Horovod compatibility."""
    return _core.join(process_set)
