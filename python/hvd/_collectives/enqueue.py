"""Handing ops to the engine: a Prep (one hvd_op, what must stay alive, how
to read its result) goes in through hvd_enqueue, a group of them through
hvd_enqueue_group; either way the caller gets a Handle. A refused op raises
what Horovod's enqueue raises for the same cause (enqueue_error).
"""

import ctypes

from hvd import _checks, _lib
from hvd._handles import Handle
from hvd._lib import C, hvd_op
from hvd.exceptions import HorovodInternalError
from hvd.process_sets import ProcessSet


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
    """One op ready to enqueue: the struct, what must stay alive,
    finish(handle_id) -> the result once it succeeded, and for a device op
    stream() -> the stream its wait orders after the op (None: host op)."""

    __slots__ = ("op", "keep", "finish", "stream")

    def __init__(self, op, keep, finish, stream=None):
        self.op = op
        self.keep = keep
        self.finish = finish
        self.stream = stream


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
    """Enqueues one op; its Handle's result is prep.finish's."""
    h = ctypes.c_int64()
    code = _lib.hvd_enqueue(ctypes.byref(prep.op), ctypes.byref(h))
    if code != C.OK:
        raise enqueue_error(code, what)
    finish = prep.finish
    return Handle((h.value,), prep.keep, lambda ids: finish(ids[0]), prep.stream)


def _device_name(device):
    return "CPU" if device == C.DEVICE_CPU else f"CUDA device {device}"


def submit_group(preps, what):
    """Enqueues ops negotiated and completed together (a grouped op); the
    Handle's result is the list of their results."""
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
                  lambda ids: [f(i) for f, i in zip(finishes, ids)], preps[0].stream)
