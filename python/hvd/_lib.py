"""libhvd.so through ctypes: loading, function signatures, the hvd_op struct,
the library's constants and error checking.

hvd_op is built by field name only (``make_op(op_type=..., input=...)``),
which fills struct_size; at import the library's ABI version and hvd_op's
size and field offsets, as libhvd reports them (hvd_constant), are checked
against this module's ctypes mirror, so a mismatched package and library
fail at once with one error naming the difference.

Nothing here knows about frameworks. Constants are read from the library
(hvd_constant), never copied: ``C.FLOAT32`` is the value of HVD_FLOAT32.
ctypes releases the GIL for the duration of every call, so a thread blocked
in hvd_wait() does not stop the others.
"""

import ctypes
import os
import shutil

from hvd.exceptions import HorovodInternalError

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB_NAME = "libhvd.so"


def _candidates():
    """Where libhvd.so is looked for, in order (docs/python.md)."""
    env = os.environ.get("HVD_LIBRARY")
    if env:
        yield env
    yield os.path.join(_HERE, _LIB_NAME)  # build/python/hvd: the build tree's copy
    yield os.path.normpath(os.path.join(_HERE, "..", "..", "build", "lib", _LIB_NAME))  # source tree
    # cmake --install: <prefix>/lib/python3.X/dist-packages/hvd -> <prefix>/lib
    yield os.path.normpath(os.path.join(_HERE, "..", "..", "..", _LIB_NAME))
    yield _LIB_NAME  # the system loader: LD_LIBRARY_PATH, ldconfig (/usr/local/lib)
    hvdrun = shutil.which("hvdrun")  # a prefix whose bin/ is on PATH (pip-installed package)
    if hvdrun:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(hvdrun)))
        yield os.path.join(prefix, "lib", _LIB_NAME)


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "hvd: cannot load libhvd.so; tried:\n  " + "\n  ".join(tried) +
        "\nInstall it (cmake --install build) or point HVD_LIBRARY at it.")


lib, path = _load()

_i32 = ctypes.c_int32
_i64 = ctypes.c_int64
_int = ctypes.c_int
_p = ctypes.c_void_p
_pi64 = ctypes.POINTER(ctypes.c_int64)
_pi32 = ctypes.POINTER(ctypes.c_int32)


# The HVD_ABI_VERSION this package was written for (hvd/c_api.h).
ABI_VERSION = 5


class hvd_op(ctypes.Structure):
    """Mirrors ``struct hvd_op`` of hvd/c_api.h, field for field. Build it
    with make_op(), never positionally."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("op_type", ctypes.c_int32),
        ("name", ctypes.c_char_p),
        ("input", ctypes.c_void_p),
        ("output", ctypes.c_void_p),
        ("shape", _pi64),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("reduce_op", ctypes.c_int32),
        ("prescale_factor", ctypes.c_double),
        ("postscale_factor", ctypes.c_double),
        ("root_rank", ctypes.c_int32),
        ("splits", _pi64),
        ("process_set_id", ctypes.c_int32),
        ("stream", ctypes.c_void_p),
        ("ready_event", ctypes.c_void_p),
    ]


_OP_FIELDS = frozenset(name for name, _ in hvd_op._fields_) - {"struct_size"}
_OP_SIZE = ctypes.sizeof(hvd_op)


def make_op(**fields):
    """An hvd_op with struct_size set, on the CPU, in the global process set,
    every other field zero, then ``fields`` (by name; an unknown name is a
    TypeError naming it). Built by ctypes' own constructor: this is on every
    op's path."""
    if not _OP_FIELDS.issuperset(fields):
        unknown = sorted(set(fields) - _OP_FIELDS)
        raise TypeError(f"hvd_op has no field {', '.join(unknown)}")
    fields.setdefault("device", C.DEVICE_CPU)
    fields.setdefault("process_set_id", C.GLOBAL_PROCESS_SET)
    return hvd_op(struct_size=_OP_SIZE, **fields)


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


def _declare_new(name, restype, *argtypes):
    """A function of this package's ABI version: None in an older libhvd,
    which _check_layout() then refuses with its message."""
    return _declare(name, restype, *argtypes) if hasattr(lib, name) else None


hvd_init = _declare("hvd_init", _int)
hvd_shutdown = _declare("hvd_shutdown", _int)
hvd_is_initialized = _declare("hvd_is_initialized", _int)
hvd_abort = _declare("hvd_abort", _int, ctypes.c_char_p)
hvd_rank = _declare("hvd_rank", _int)
hvd_size = _declare("hvd_size", _int)
hvd_local_rank = _declare("hvd_local_rank", _int)
hvd_local_size = _declare("hvd_local_size", _int)
hvd_cross_rank = _declare("hvd_cross_rank", _int)
hvd_cross_size = _declare("hvd_cross_size", _int)
hvd_elastic_host_updates = _declare("hvd_elastic_host_updates", _int)
HVD_HOSTS_ADDED, HVD_HOSTS_REMOVED = 1, 2  # hvd_elastic_host_updates bits
hvd_elastic_committed = _declare("hvd_elastic_committed", _int, _i64, _int)
hvd_allreduce = _declare("hvd_allreduce", _int, _p, _i64, _int, _int)
hvd_broadcast = _declare("hvd_broadcast", _int, _p, _i64, _int, _int)
hvd_allgather = _declare("hvd_allgather", _int, _p, _i64, _int, _p, _pi64)
hvd_barrier = _declare("hvd_barrier", _int)
hvd_enqueue = _declare("hvd_enqueue", _int, ctypes.POINTER(hvd_op), _pi64)
hvd_enqueue_group = _declare("hvd_enqueue_group", _int, ctypes.POINTER(hvd_op), _i32, _pi64)
hvd_poll = _declare("hvd_poll", _int, _i64)
hvd_wait = _declare("hvd_wait", _int, _i64, ctypes.c_double)
hvd_handle_output_shape = _declare("hvd_handle_output_shape", _int, _i64, _pi64, _i32, _pi32)
hvd_handle_copy_output = _declare("hvd_handle_copy_output", _int, _i64, _p, _i64)
hvd_wait_on_stream = _declare_new("hvd_wait_on_stream", _int, _i64, _p, ctypes.c_double)
hvd_handle_copy_output_on = _declare_new("hvd_handle_copy_output_on", _int, _i64, _p, _i64, _p)
hvd_handle_take_output = _declare("hvd_handle_take_output", _int, _i64,
                                  ctypes.POINTER(ctypes.c_void_p), _pi64,
                                  ctypes.POINTER(ctypes.c_void_p))
hvd_output_free = _declare("hvd_output_free", None, ctypes.c_void_p)
hvd_handle_received_splits = _declare("hvd_handle_received_splits", _int, _i64, _pi64, _i32)
hvd_handle_join_result = _declare("hvd_handle_join_result", _int, _i64, _pi32)
hvd_release = _declare("hvd_release", _int, _i64)
hvd_add_process_set = _declare("hvd_add_process_set", _int, _pi32, _i32, _pi32)
hvd_remove_process_set = _declare("hvd_remove_process_set", _int, _i32)
hvd_process_set_rank = _declare("hvd_process_set_rank", _int, _i32)
hvd_process_set_size = _declare("hvd_process_set_size", _int, _i32)
hvd_process_set_ranks = _declare("hvd_process_set_ranks", _int, _i32, _pi32, _i32)
hvd_start_timeline = _declare("hvd_start_timeline", _int, ctypes.c_char_p)
hvd_stop_timeline = _declare("hvd_stop_timeline", _int)
hvd_constant = _declare("hvd_constant", _int, ctypes.c_char_p, _pi64)
hvd_build_feature = _declare("hvd_build_feature", _int, ctypes.c_char_p)
hvd_last_error = _declare("hvd_last_error", ctypes.c_char_p)
hvd_version = _declare("hvd_version", ctypes.c_char_p)
hvd_abi_version = _declare("hvd_abi_version", _int)


def constant(name):
    """The value of the C constant ``name`` (e.g. "HVD_FLOAT32")."""
    value = ctypes.c_int64()
    if hvd_constant(name.encode(), ctypes.byref(value)) != 0:
        raise ImportError(f"hvd: {path} has no constant {name} ({last_error()}); "
                          "the Python package and libhvd.so do not match")
    return value.value


class _Constants:
    """Every constant the package uses, read once from the library:
    ``C.FLOAT32`` is HVD_FLOAT32, ``C.OP_SUM`` is HVD_OP_SUM, ..."""

    NAMES = (
        "UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "BFLOAT16", "FLOAT32",
        "FLOAT64", "BOOL",
        "OP_SUM", "OP_AVERAGE", "OP_MIN", "OP_MAX", "OP_PRODUCT",
        "OK", "ERR_INVALID_ARGUMENT", "ERR_NOT_FOUND", "ERR_ALREADY_EXISTS", "ERR_TIMEOUT",
        "ERR_UNAVAILABLE", "ERR_ABORTED", "ERR_UNAUTHENTICATED", "ERR_FAILED_PRECONDITION",
        "ERR_CANCELLED", "ERR_UNIMPLEMENTED", "ERR_INTERNAL",
        "OPTYPE_ALLREDUCE", "OPTYPE_ALLGATHER", "OPTYPE_BROADCAST", "OPTYPE_ALLTOALL",
        "OPTYPE_REDUCESCATTER", "OPTYPE_BARRIER", "OPTYPE_JOIN",
        "DEVICE_CPU", "GLOBAL_PROCESS_SET",
    )

    def __init__(self):
        for n in self.NAMES:
            setattr(self, n, constant("HVD_" + n))
        self.ERROR_NAMES = {getattr(self, n): "HVD_" + n for n in self.NAMES
                            if n.startswith("ERR_")}


C = _Constants()


def layout_mismatch(struct, lookup, abi_version):
    """What differs between the ctypes ``struct`` (hvd_op) and the library's
    layout, as read by ``lookup(name)`` (None when the library has no such
    constant), or None when they agree. The library may be newer (a larger
    hvd_op: it accepts the shorter struct) but not older."""
    if abi_version < ABI_VERSION:
        return (f"libhvd has C ABI version {abi_version}, older than the version "
                f"{ABI_VERSION} this hvd package needs")
    for name, _ in struct._fields_:
        offset = lookup(f"hvd_op.offset.{name}")
        ours = getattr(struct, name).offset
        if offset is None:
            return f"libhvd's hvd_op has no field {name} (the package's is at offset {ours})"
        if offset != ours:
            return f"hvd_op.{name} is at offset {offset} in libhvd but {ours} in the package"
    size, ours = lookup("hvd_op.size"), ctypes.sizeof(struct)
    if size is None or size < ours:
        return f"libhvd's hvd_op is {size} bytes, smaller than the package's {ours}"
    oldest = lookup("hvd_op.min_size")
    if oldest is None or ours < oldest:
        return f"the package's hvd_op is {ours} bytes, below libhvd's oldest layout ({oldest})"
    return None


def _lookup(name):
    value = ctypes.c_int64()
    return value.value if hvd_constant(name.encode(), ctypes.byref(value)) == 0 else None


def _check_layout():
    problem = layout_mismatch(hvd_op, _lookup, hvd_abi_version())
    if problem:
        raise ImportError(f"hvd: {path} does not match this Python package: {problem}; "
                          "rebuild libhvd.so or install the package that came with it")


_check_layout()


def last_error():
    """The message of the last failed call on this thread."""
    msg = hvd_last_error()
    return msg.decode(errors="replace") if msg else ""


def error(code, what=None):
    """A HorovodInternalError for the failed call's ``code`` (read the message
    at once: it is per thread and the next failing call replaces it)."""
    message = last_error() or C.ERROR_NAMES.get(code, f"error {code}")
    if what and not message.startswith(what):
        message = f"{what}: {message}"
    return HorovodInternalError(message, code)


def check(code, what=None):
    """Raises HorovodInternalError unless ``code`` is HVD_OK."""
    if code != C.OK:
        raise error(code, what)
    return code


def check_nonnegative(value, what=None):
    """For calls that return a figure or -HVD_ERR_*."""
    if value < 0:
        raise error(-value, what)
    return value
