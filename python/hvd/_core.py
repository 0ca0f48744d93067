"""Collectives over any array type, given an adapter for it.

An adapter (``kind``) knows one array type (torch tensors, numpy arrays):
    prepare(x)         -> x or a contiguous copy; TypeError for what the
                          engine cannot take (dtype, device, sparse)
    info(x)            -> (data pointer, shape tuple, HVD dtype, HVD device)
                          of a prepared array
    stream(x)          -> the CUDA stream (an int) its op is ordered on, or
                          None (CPU arrays)
    ready_event(x)     -> (event, pointer): an event recorded now on that
                          stream, for the device's communication stream to
                          wait on (kept alive until the op completes), and
                          its cudaEvent_t as an int; (None, None) for CPU
                          arrays
    empty(shape, like) -> a new contiguous array with like's dtype and device
    wrap(buffer, shape, like)
                       -> an array of like's dtype over a writable buffer
                          object (no copy), keeping the buffer alive
    nbytes(x)          -> size of a prepared array in bytes
    element_size(x)    -> bytes per element of an array
    copy_(dst, src)    -> copies src into dst (dst may be non-contiguous)
    int_array(values, like)
                       -> an int32 array of the values on like's device
                          (received splits, where Horovod puts them)
    to_list(values)    -> a list of ints from a sequence or an array

Each ``prep_*`` builds one hvd_op (by field name: _lib.make_op) and says
what the finished op returns;
``submit`` enqueues one, ``submit_group`` enqueues several negotiated and
completed together (grouped ops). Both return a Handle.
"""

import ctypes
import math
import numbers
import weakref

from hvd import _checks, _lib
from hvd._handles import Handle
from hvd._lib import C, hvd_op, make_op
from hvd.common import reduce_op_code
from hvd.exceptions import HorovodInternalError
from hvd.process_sets import ProcessSet, global_process_set

_int64_array_types = {}


def _shape_array(shape):
    n = len(shape)
    if n == 0:
        return None
    t = _int64_array_types.get(n)
    if t is None:
        t = _int64_array_types[n] = ctypes.c_int64 * n
    return t(*shape)


_name = _checks.tensor_name


def set_id(process_set):
    """The engine id of a registered process set."""
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"process_set must be a ProcessSet (hvd.global_process_set or what "
                        f"hvd.add_process_set() returned), not {type(process_set).__name__}")
    ps_id = process_set.process_set_id
    if ps_id is None:
        raise ValueError(f"{process_set} is not registered: pass it to hvd.init(process_sets=...) "
                         "or hvd.add_process_set() first")
    return ps_id


class Prep:
    """One op ready to enqueue: the struct, what must stay alive, and
    finish(handle_id) -> the result once it succeeded."""

    __slots__ = ("op", "keep", "finish")

    def __init__(self, op, keep, finish):
        self.op = op
        self.keep = keep
        self.finish = finish


def enqueue_error(code, what):
    """The exception for an op the library refused at enqueue, typed as
    Horovod's enqueue raises it: the caller's arguments (a bad value, a name
    already in flight) -> ValueError; a call the engine cannot take now (a
    pending join) -> RuntimeError; an engine that stopped or failed (the
    world is broken) -> HorovodInternalError, what elastic training catches,
    and so is a call before init() (Horovod wraps its precondition error)."""
    if code == C.ERR_FAILED_PRECONDITION and _lib.hvd_is_initialized() != 1:
        return HorovodInternalError(f"{what}: {_checks.NOT_INITIALIZED}", code)
    internal = _lib.error(code, what)
    if code in (C.ERR_INVALID_ARGUMENT, C.ERR_ALREADY_EXISTS, C.ERR_NOT_FOUND):
        return ValueError(str(internal))
    if code == C.ERR_UNIMPLEMENTED:
        return NotImplementedError(str(internal))
    if code == C.ERR_FAILED_PRECONDITION:
        return RuntimeError(str(internal))
    return internal


def submit(prep, what):
    h = ctypes.c_int64()
    code = _lib.hvd_enqueue(ctypes.byref(prep.op), ctypes.byref(h))
    if code != C.OK:
        raise enqueue_error(code, what)
    finish = prep.finish
    return Handle((h.value,), prep.keep, lambda ids: finish(ids[0]))


def _device_name(device):
    return "CPU" if device == C.DEVICE_CPU else f"CUDA device {device}"


def submit_group(preps, what):
    n = len(preps)
    if n == 0:
        return Handle((), None, lambda ids: [])
    devices = sorted({p.op.device for p in preps})
    if len(devices) > 1:  # as Horovod: one group, one device
        raise RuntimeError(f"{what}: the tensors of one group must all be on one device; "
                           f"these are on {', '.join(_device_name(d) for d in devices)}")
    ops = (hvd_op * n)(*[p.op for p in preps])
    handles = (ctypes.c_int64 * n)()
    code = _lib.hvd_enqueue_group(ops, n, handles)
    if code != C.OK:
        raise enqueue_error(code, what)
    finishes = [p.finish for p in preps]
    return Handle(list(handles), [p.keep for p in preps],
                  lambda ids: [f(i) for f, i in zip(finishes, ids)])


# Host outputs from this size on are handed over rather than copied.
TAKE_OUTPUT_MIN_BYTES = 1 << 20


def _take_output(kind, handle_id, shape, like):
    """The engine's host output of a finished op as an array over the same
    memory (hvd_handle_take_output): no copy, and no fresh allocation whose
    every page faults; the memory goes back to libhvd when the array (and
    every view of it) is gone."""
    data, nbytes, token = ctypes.c_void_p(), ctypes.c_int64(), ctypes.c_void_p()
    _lib.check(_lib.hvd_handle_take_output(handle_id, ctypes.byref(data), ctypes.byref(nbytes),
                                           ctypes.byref(token)), "take output")
    buffer = (ctypes.c_char * nbytes.value).from_address(data.value)
    # Not at interpreter exit: arrays may outlive the finalizers run then.
    weakref.finalize(buffer, _lib.hvd_output_free, token).atexit = False
    return kind.wrap(buffer, shape, like)


def read_output(kind, handle_id, like, ndim):
    """The engine-allocated output of a finished op, as a new array."""
    ndim = max(ndim, 1)
    shape = (ctypes.c_int64 * ndim)()
    got = ctypes.c_int32()
    _lib.check(_lib.hvd_handle_output_shape(handle_id, shape, ndim, ctypes.byref(got)),
               "output shape")
    shape = tuple(shape[:got.value])
    on_host = kind.info(like)[3] == C.DEVICE_CPU
    if on_host and math.prod(shape) * kind.element_size(like) >= TAKE_OUTPUT_MIN_BYTES:
        return _take_output(kind, handle_id, shape, like)
    out = kind.empty(shape, like)
    nbytes = kind.nbytes(out)
    _lib.check(_lib.hvd_handle_copy_output(handle_id, kind.info(out)[0] if nbytes else None,
                                           nbytes), "copy output")
    return out


def _in_place_result(kind, tensor, src):
    if src is tensor:
        return lambda hid: tensor

    def finish(hid):
        kind.copy_(tensor, src)  # tensor was not contiguous: the op ran on a copy
        return tensor
    return finish


# ---- The ops ----------------------------------------------------------------

_HOST_ORDER = {}  # CPU arrays: no stream, no event (make_op's NULL defaults)


def _ordering(kind, src, device):
    """make_op's stream and ready_event for a prepared array on `device`
    (recorded after prepare(), so a contiguous copy is included), and the
    event to keep alive."""
    if device == C.DEVICE_CPU:
        return _HOST_ORDER, None
    event, pointer = kind.ready_event(src)
    return {"stream": kind.stream(src), "ready_event": pointer}, event


def prep_allreduce(kind, tensor, inplace, name, op, prescale_factor, postscale_factor,
                   process_set):
    src = kind.prepare(tensor)
    ptr, shape, dtype, device = kind.info(src)
    if inplace:
        out, out_ptr, finish = src, ptr, _in_place_result(kind, tensor, src)
    else:
        out = kind.empty(shape, src)
        out_ptr = kind.info(out)[0]
        finish = lambda hid: out  # noqa: E731
    dims = _shape_array(shape)
    order, event = _ordering(kind, src, device)
    o = make_op(op_type=C.OPTYPE_ALLREDUCE, name=_name(name), input=ptr, output=out_ptr,
                shape=dims, ndim=len(shape), dtype=dtype, device=device,
                reduce_op=reduce_op_code(op), prescale_factor=prescale_factor,
                postscale_factor=postscale_factor, process_set_id=set_id(process_set), **order)
    return Prep(o, (tensor, src, out, dims, event), finish)


def prep_broadcast(kind, tensor, inplace, root_rank, name, process_set):
    src = kind.prepare(tensor)
    ptr, shape, dtype, device = kind.info(src)
    ps_id = set_id(process_set)
    root = process_set.set_rank_of(root_rank)
    if inplace:
        out, out_ptr, finish = src, ptr, _in_place_result(kind, tensor, src)
    else:
        out = kind.empty(shape, src)
        out_ptr = kind.info(out)[0]
        finish = lambda hid: out  # noqa: E731
    dims = _shape_array(shape)
    order, event = _ordering(kind, src, device)
    o = make_op(op_type=C.OPTYPE_BROADCAST, name=_name(name), input=ptr, output=out_ptr,
                shape=dims, ndim=len(shape), dtype=dtype, device=device, root_rank=root,
                process_set_id=ps_id, **order)
    return Prep(o, (tensor, src, out, dims, event), finish)


def _rows_op(op_type, kind, tensor, name, process_set, reduce_op=None, prescale_factor=1.0,
             postscale_factor=1.0, splits=None):
    src = kind.prepare(tensor)
    ptr, shape, dtype, device = kind.info(src)
    if len(shape) == 0:
        raise ValueError("the tensor needs at least one dimension (rows), not a scalar")
    code = 0 if reduce_op is None else reduce_op_code(reduce_op)
    order, event = _ordering(kind, src, device)
    o = make_op(op_type=op_type, name=_name(name), input=ptr, shape=_shape_array(shape),
                ndim=len(shape), dtype=dtype, device=device, reduce_op=code,
                prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                splits=splits, process_set_id=set_id(process_set), **order)
    return o, (src, event), len(shape)


def prep_allgather(kind, tensor, name, process_set):
    o, (src, event), ndim = _rows_op(C.OPTYPE_ALLGATHER, kind, tensor, name, process_set)
    return Prep(o, (tensor, src, event), lambda hid: read_output(kind, hid, src, ndim))


def prep_reducescatter(kind, tensor, name, op, prescale_factor, postscale_factor, process_set):
    o, (src, event), ndim = _rows_op(C.OPTYPE_REDUCESCATTER, kind, tensor, name, process_set,
                                     op, prescale_factor, postscale_factor)
    return Prep(o, (tensor, src, event), lambda hid: read_output(kind, hid, src, ndim))


def prep_alltoall(kind, tensor, splits, name, process_set):
    n = process_set.size()
    splits_array = None
    if splits is not None:
        values = split_values(kind.to_list(splits))
        if len(values) != n:
            raise ValueError(f"alltoall: splits has {len(values)} entries; the process set has "
                             f"{n} ranks")
        if any(v < 0 for v in values):
            raise ValueError(f"alltoall: splits {values} has negative entries")
        splits_array = (ctypes.c_int64 * n)(*values)
    o, (src, event), ndim = _rows_op(C.OPTYPE_ALLTOALL, kind, tensor, name, process_set,
                                     splits=splits_array)

    def finish(hid):
        out = read_output(kind, hid, src, ndim)
        received = (ctypes.c_int64 * n)()
        _lib.check(_lib.hvd_handle_received_splits(hid, received, n), "received splits")
        return out, kind.int_array(list(received), tensor)
    return Prep(o, (tensor, src, splits_array, event), finish)


def split_values(values):
    """alltoall splits as ints; ValueError (as Horovod) for anything that is
    not an integer (float or bool splits)."""
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"alltoall: splits must be integers (int32), not "
                             f"{type(v).__name__} ({v!r})")
        out.append(int(v))
    return out


def _control_op(op_type, process_set):
    return make_op(op_type=op_type, process_set_id=set_id(process_set))


def barrier(process_set=global_process_set):
    """Returns once every rank of the set called barrier()."""
    submit(Prep(_control_op(C.OPTYPE_BARRIER, process_set), None, lambda hid: None),
           "barrier").wait()


def join_async(process_set=global_process_set):
    def finish(hid):
        last = ctypes.c_int32()
        _lib.check(_lib.hvd_handle_join_result(hid, ctypes.byref(last)), "join result")
        return last.value
    return submit(Prep(_control_op(C.OPTYPE_JOIN, process_set), None, finish), "join")


def join(process_set=global_process_set):
    """This rank has no more data: it takes part in the others' allreduces
    with zeros until every rank joined. Returns the rank that joined last."""
    return join_async(process_set).wait()
