"""The results of finished ops, as arrays of the caller's framework: outputs
the engine allocated (allgather, alltoall, reducescatter), handed over or
copied; in-place results copied back into a non-contiguous array; the
rank a join reports.
"""

import ctypes
import math
import weakref

from hvd import _lib
from hvd._lib import C

# Host outputs from this size on are handed over rather than copied.
TAKE_OUTPUT_MIN_BYTES = 1 << 20


def _take_output(fw, handle_id, shape, like):
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
    return fw.wrap(buffer, shape, like)


def read_output(fw, handle_id, like, ndim):
    """The engine-allocated output of a finished op, as a new array."""
    ndim = max(ndim, 1)
    shape = (ctypes.c_int64 * ndim)()
    got = ctypes.c_int32()
    _lib.check(_lib.hvd_handle_output_shape(handle_id, shape, ndim, ctypes.byref(got)),
               "output shape")
    shape = tuple(shape[:got.value])
    on_host = fw.info(like)[3] == C.DEVICE_CPU
    if on_host and math.prod(shape) * fw.element_size(like) >= TAKE_OUTPUT_MIN_BYTES:
        return _take_output(fw, handle_id, shape, like)
    out = fw.empty(shape, like)
    nbytes = fw.nbytes(out)
    dst = fw.info(out)[0] if nbytes else None
    if on_host:
        _lib.check(_lib.hvd_handle_copy_output(handle_id, dst, nbytes), "copy output")
    else:
        # On the current stream, where `out` was allocated and the handle's
        # wait put the op: ordered like the caller's own kernels, no host wait.
        _lib.check(_lib.hvd_handle_copy_output_on(handle_id, dst, nbytes, fw.stream(out)),
                   "copy output")
    return out


def in_place_result(fw, array, src):
    """finish(handle_id) of an in-place op on ``array`` that ran on ``src``
    (prepare(array)): ``array``, with the result copied back when src is a
    contiguous copy."""
    if src is array:
        return lambda hid: array

    def finish(hid):
        fw.copy_(array, src)  # array was not contiguous: the op ran on a copy
        return array
    return finish


def join_result(handle_id):
    """The rank that joined last, of a finished join."""
    last = ctypes.c_int32()
    _lib.check(_lib.hvd_handle_join_result(handle_id, ctypes.byref(last)), "join result")
    return last.value
