"""The framework protocol (hvd._collectives.framework) for numpy arrays:
host memory only; dtypes uint8, int8, int16, int32, int64, float16, float32,
float64, bool. hvd.numpy binds the collectives to it.
"""

import numpy as _np

from hvd._collectives.framework import Framework
from hvd._lib import C

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


class NumpyFramework(Framework):
    """The framework protocol for numpy arrays (host memory only)."""

    def prepare(self, a):
        if not isinstance(a, _np.ndarray):
            raise TypeError(f"hvd.numpy expects a numpy.ndarray, not {type(a).__name__}")
        if a.dtype not in _DTYPES:
            raise TypeError(f"hvd does not support arrays of dtype {a.dtype}; supported: "
                            + ", ".join(str(d) for d in _DTYPES))
        if not a.flags.c_contiguous or not a.dtype.isnative:
            a = _np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
        return a

    def info(self, a):
        return a.ctypes.data, a.shape, _DTYPES[a.dtype], C.DEVICE_CPU

    def check_writable(self, a):
        if isinstance(a, _np.ndarray) and not a.flags.writeable:
            raise ValueError("in-place operation on a read-only array")

    def empty(self, shape, like):
        return _np.empty(shape, dtype=like.dtype)

    def wrap(self, buffer, shape, like):
        return _np.frombuffer(buffer, dtype=like.dtype).reshape(shape)

    def nbytes(self, a):
        return a.nbytes

    def element_size(self, a):
        return a.itemsize

    def copy_(self, dst, src):
        dst[...] = src

    def int_array(self, values, like):
        return _np.asarray(values, dtype=_np.int32)

    def to_list(self, values):
        return list(values.tolist() if hasattr(values, "tolist") else values)
