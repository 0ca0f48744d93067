"""Collectives on numpy arrays, for framework-free code.

    import numpy as np
    import hvd.numpy as hvd
    hvd.init()
    total = hvd.allreduce(np.ones(4, np.float32), op=hvd.Sum)

The calls and their defaults are those of hvd.torch (op defaults to
Average; root ranks are global ranks); results are new arrays except for the
in-place variants (allreduce_, broadcast_). dtypes: uint8, int8, int16,
int32, int64, float16, float32, float64, bool.
"""

import numpy as _np

from hvd import _core
from hvd._checks import member_name as _member
from hvd._lib import C
from hvd.common import *  # noqa: F401,F403  (init, rank, Sum, ProcessSet, ...)
from hvd.common import global_process_set, synchronize, poll  # noqa: F401
from hvd._core import barrier, join  # noqa: F401

_DTYPES = {
    _np.dtype(_np.uint8): C.UINT8,
    _np.dtype(_np.int8): C.INT8,
    _np.dtype(_np.int16): C.INT16,
    _np.dtype(_np.int32): C.INT32,
    _np.dtype(_np.int64): C.INT64,
    _np.dtype(_np.float16): C.FLOAT16,
    _np.dtype(_np.float32): C.FLOAT32,
    _np.dtype(_np.float64): C.FLOAT64,
    _np.dtype(_np.bool_): C.BOOL,
}


class _NumpyKind:
    """The adapter of hvd._core for numpy arrays."""

    @staticmethod
    def prepare(a):
        if not isinstance(a, _np.ndarray):
            raise TypeError(f"hvd.numpy expects a numpy.ndarray, not {type(a).__name__}")
        if a.dtype not in _DTYPES:
            raise TypeError(f"hvd does not support arrays of dtype {a.dtype}; supported: "
                            + ", ".join(str(d) for d in _DTYPES))
        if not a.flags.c_contiguous or not a.dtype.isnative:
            a = _np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
        return a

    @staticmethod
    def info(a):
        return a.ctypes.data, a.shape, _DTYPES[a.dtype], C.DEVICE_CPU

    @staticmethod
    def stream(a):
        return None  # host memory

    @staticmethod
    def ready_event(a):
        return None, None  # host memory

    @staticmethod
    def empty(shape, like):
        return _np.empty(shape, dtype=like.dtype)

    @staticmethod
    def wrap(buffer, shape, like):
        return _np.frombuffer(buffer, dtype=like.dtype).reshape(shape)

    @staticmethod
    def nbytes(a):
        return a.nbytes

    @staticmethod
    def element_size(a):
        return a.itemsize

    @staticmethod
    def copy_(dst, src):
        dst[...] = src

    @staticmethod
    def int_array(values, like):
        return _np.asarray(values, dtype=_np.int32)

    @staticmethod
    def to_list(values):
        return list(values.tolist() if hasattr(values, "tolist") else values)


_kind = _NumpyKind()


def _writable(a):
    if isinstance(a, _np.ndarray) and not a.flags.writeable:
        raise ValueError("in-place operation on a read-only array")
    return a


def allreduce_async(array, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
                    postscale_factor=1.0, process_set=global_process_set):
    return _core.submit(_core.prep_allreduce(_kind, array, False, name, op, prescale_factor,
                                             postscale_factor, process_set), "allreduce")


def allreduce(array, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
              postscale_factor=1.0, process_set=global_process_set):
    """The reduction of ``array`` over the ranks of the set, as a new array."""
    return allreduce_async(array, op, name, prescale_factor, postscale_factor,
                           process_set).wait()


def allreduce_async_(array, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
                     postscale_factor=1.0, process_set=global_process_set):
    return _core.submit(_core.prep_allreduce(_kind, _writable(array), True, name, op,
                                             prescale_factor, postscale_factor, process_set),
                        "allreduce")


def allreduce_(array, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
               postscale_factor=1.0, process_set=global_process_set):
    """In place: ``array`` receives the reduction."""
    return allreduce_async_(array, op, name, prescale_factor, postscale_factor,
                            process_set).wait()


def grouped_allreduce_async(arrays, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
                            postscale_factor=1.0, process_set=global_process_set):
    preps = [_core.prep_allreduce(_kind, a, False, _member(name, i), op, prescale_factor,
                                  postscale_factor, process_set) for i, a in enumerate(arrays)]
    return _core.submit_group(preps, "grouped_allreduce")


def grouped_allreduce(arrays, op=Average, name=None, prescale_factor=1.0,  # noqa: F405
                      postscale_factor=1.0, process_set=global_process_set):
    return grouped_allreduce_async(arrays, op, name, prescale_factor, postscale_factor,
                                   process_set).wait()


def allgather_async(array, name=None, process_set=global_process_set):
    return _core.submit(_core.prep_allgather(_kind, array, name, process_set), "allgather")


def allgather(array, name=None, process_set=global_process_set):
    """The arrays of every rank concatenated along the first dimension (which
    may differ between ranks), in rank order."""
    return allgather_async(array, name, process_set).wait()


def grouped_allgather(arrays, name=None, process_set=global_process_set):
    preps = [_core.prep_allgather(_kind, a, _member(name, i), process_set)
             for i, a in enumerate(arrays)]
    return _core.submit_group(preps, "grouped_allgather").wait()


def broadcast_async(array, root_rank, name=None, process_set=global_process_set):
    return _core.submit(_core.prep_broadcast(_kind, array, False, root_rank, name, process_set),
                        "broadcast")


def broadcast(array, root_rank, name=None, process_set=global_process_set):
    """``root_rank``'s array (a global rank), as a new array on every rank."""
    return broadcast_async(array, root_rank, name, process_set).wait()


def broadcast_async_(array, root_rank, name=None, process_set=global_process_set):
    return _core.submit(_core.prep_broadcast(_kind, _writable(array), True, root_rank, name,
                                             process_set), "broadcast")


def broadcast_(array, root_rank, name=None, process_set=global_process_set):
    return broadcast_async_(array, root_rank, name, process_set).wait()


def alltoall_async(array, splits=None, name=None, process_set=global_process_set):
    return _core.submit(_core.prep_alltoall(_kind, array, splits, name, process_set), "alltoall")


def alltoall(array, splits=None, name=None, process_set=global_process_set):
    """Sends splits[i] rows (even parts without splits) to rank i of the set.
    Returns the received rows; with ``splits``, (rows, received_splits)."""
    out, received = alltoall_async(array, splits, name, process_set).wait()
    return out if splits is None else (out, received)


def reducescatter_async(array, op=Average, name=None, process_set=global_process_set,  # noqa: F405
                        prescale_factor=1.0, postscale_factor=1.0):
    return _core.submit(_core.prep_reducescatter(_kind, array, name, op, prescale_factor,
                                                 postscale_factor, process_set), "reducescatter")


def reducescatter(array, op=Average, name=None, process_set=global_process_set,  # noqa: F405
                  prescale_factor=1.0, postscale_factor=1.0):
    """Reduces over the ranks and gives rank i its part of the first
    dimension (the first rows % size ranks get one row more)."""
    return reducescatter_async(array, op, name, process_set, prescale_factor,
                               postscale_factor).wait()


def grouped_reducescatter(arrays, op=Average, name=None,  # noqa: F405
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    preps = [_core.prep_reducescatter(_kind, a, _member(name, i), op, prescale_factor,
                                      postscale_factor, process_set)
             for i, a in enumerate(arrays)]
    return _core.submit_group(preps, "grouped_reducescatter").wait()
