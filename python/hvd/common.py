"""The framework-free core of hvd: joining and leaving the job, who we are,
process sets, reduction ops, build queries, the timeline and the handles of
asynchronous operations. hvd.torch and hvd.numpy build on it; the names
follow horovod.common.basics so that Horovod code finds what it expects.
"""

import sys as _sys

from hvd import _checks, _lib, _handles
from hvd._lib import C
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from hvd.process_sets import (ProcessSet, global_process_set, add_process_set,  # noqa: F401
                              remove_process_set)
from hvd import process_sets as _process_sets
from hvd._handles import Handle, poll, synchronize  # noqa: F401

__version__ = _lib.hvd_version().decode()


# ---- Reduction ops: values are the library's HVD_OP_* constants ----------

class ReduceOp(int):
    """A reduction op: an int (the library's value) with a name."""

    def __new__(cls, name, value):
        self = super().__new__(cls, value)
        self.op_name = name
        return self

    def __repr__(self):
        return self.op_name

    __str__ = __repr__


class _UnsupportedOp:
    """An op Horovod has and hvd does not implement (yet)."""

    def __init__(self, name):
        self.op_name = name

    def __repr__(self):
        return self.op_name


Sum = ReduceOp("Sum", C.OP_SUM)
Average = ReduceOp("Average", C.OP_AVERAGE)
Min = ReduceOp("Min", C.OP_MIN)
Max = ReduceOp("Max", C.OP_MAX)
Product = ReduceOp("Product", C.OP_PRODUCT)
Adasum = _UnsupportedOp("Adasum")

_OPS = {int(o): o for o in (Sum, Average, Min, Max, Product)}


def reduce_op_code(op):
    """The library's value for ``op``; NotImplementedError for Adasum (what
    horovod.torch raises where it cannot run Adasum), ValueError for a non-op."""
    if op is Adasum:
        raise NotImplementedError(adasum_unsupported())
    if isinstance(op, bool) or not isinstance(op, int) or int(op) not in _OPS:
        raise ValueError(f"{op!r} is not a reduction op (use hvd.Sum, hvd.Average, hvd.Min, "
                         "hvd.Max or hvd.Product)")
    return int(op)


def adasum_unsupported():
    """Why Adasum cannot run: Horovod's words where it refuses too."""
    n = _lib.hvd_size()
    if n > 0 and n & (n - 1):
        return "Running Adasum with non-power of 2 ranks is not supported yet."
    return ("Adasum is not supported by hvd (Horovod runs it only with MPI or NCCL, which "
            "hvd does not use); use op=hvd.Average")


def handle_average_backwards_compatibility(op, average):
    """Horovod's rule: ``op`` wins; ``average=`` (deprecated) maps to
    Average/Sum; neither means Average."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. "
                             "Please provide only one of them.")
        return op
    if average is not None:
        import warnings
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning, stacklevel=_caller_outside_hvd())
        return Average if average else Sum
    return Average


def _caller_outside_hvd():
    """warnings.warn's stacklevel, from the function calling this one, of the
    innermost frame outside the hvd package: the user's call, however many
    of hvd's own functions lie between."""
    frame, level = _sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "hvd":
        frame, level = frame.f_back, level + 1
    return level


# ---- Joining and leaving the job ------------------------------------------

def init(comm=None, process_sets=None):
    """Joins the job hvdrun (or torchrun, srun, mpirun) started; a world of size 1 without a launcher.
    ``process_sets``: ProcessSet objects to register at once (every rank
    passes the same list). A second call is a no-op but for new sets."""
    if comm is not None:
        raise ValueError("hvd.init(comm=...) needs MPI; hvd runs without it. "
                         "Use process_sets=[hvd.ProcessSet(ranks)] for subsets of ranks.")
    _lib.check(_lib.hvd_init(), "init")
    for ps in process_sets or ():
        if not isinstance(ps, ProcessSet):
            ps = ProcessSet(ps)
        if ps.process_set_id is None:
            _process_sets._register(ps)


def shutdown():
    """Leaves the job: pending operations fail; init() may be called again."""
    _lib.check(_lib.hvd_shutdown(), "shutdown")
    _handles.forget_all()
    _process_sets._forget_all()


def is_initialized():
    return _lib.hvd_is_initialized() == 1


def _world(fn, what):
    value = fn()
    if value < 0:
        raise _checks.not_initialized(f"{what}()")
    return value


def size():
    """Number of processes in the job."""
    return _world(_lib.hvd_size, "size")


def rank():
    """This process's rank, 0 .. size()-1."""
    return _world(_lib.hvd_rank, "rank")


def local_size():
    """Number of processes on this host."""
    return _world(_lib.hvd_local_size, "local_size")


def local_rank():
    """This process's rank among those on this host."""
    return _world(_lib.hvd_local_rank, "local_rank")


def cross_size():
    """Number of hosts (processes with this local rank across hosts)."""
    return _world(_lib.hvd_cross_size, "cross_size")


def cross_rank():
    """This host's index among the hosts."""
    return _world(_lib.hvd_cross_rank, "cross_rank")


def is_homogeneous():
    """True when every host runs the same number of processes."""
    return size() == local_size() * cross_size()


# ---- Build and feature queries (horovod.common.basics's names) -----------
# libhvd answers them (hvd_build_feature), before init() too.

def _feature(name):
    return _lib.check_nonnegative(_lib.hvd_build_feature(name.encode()), name)


def _flag(name, doc):
    """The query ``name()``: libhvd's answer as a bool."""
    def query():
        return bool(_feature(name))
    query.__name__ = query.__qualname__ = name
    query.__doc__ = doc
    return query


mpi_built = _flag("mpi_built", "False: hvd runs without MPI.")
mpi_enabled = _flag("mpi_enabled", "False: hvd runs without MPI.")
gloo_built = _flag("gloo_built", "True: Gloo is hvd's CPU transport.")
gloo_enabled = _flag("gloo_enabled",
                     "True when the CPU transport (HVD_CPU_TRANSPORT, --cpu-transport) is gloo.")
cuda_built = _flag("cuda_built",
                   "True when CUDA tensors can be reduced: the NCCL plugin is present.")
rocm_built = _flag("rocm_built", "False.")
ccl_built = _flag("ccl_built", "False.")
ddl_built = _flag("ddl_built", "False.")


def mpi_threads_supported():
    """Like Horovod without MPI: raises ValueError (it is defined only when
    mpi_enabled(), which hvd never is)."""
    if not mpi_enabled():
        raise ValueError("Horovod MPI is not enabled: hvd runs without MPI, so "
                         "mpi_threads_supported() has no answer")
    return bool(_feature("mpi_threads_supported"))


def nccl_built():
    """An int, as in Horovod: 0 without the NCCL plugin (libhvd_nccl.so beside
    libhvd.so), else the version code of the NCCL it was built against
    (NCCL_VERSION_CODE: 2.28.9 is 22809), so `nccl_built() >= 2700` finds
    NCCL's alltoall as it does with Horovod."""
    return int(_feature("nccl_built"))


# ---- Timeline --------------------------------------------------------------

def start_timeline(file_path, mark_cycles=False):
    """Starts writing a Chrome-trace timeline to ``file_path`` (rank 0 writes;
    elsewhere a no-op). ``mark_cycles`` is accepted for Horovod compatibility."""
    _lib.check(_lib.hvd_start_timeline(str(file_path).encode()), "start_timeline")


def stop_timeline():
    _lib.check(_lib.hvd_stop_timeline(), "stop_timeline")
