"""Process sets: subsets of the ranks that run collectives among themselves.

As in Horovod, ranks are global ranks: ``ProcessSet([0, 2])`` holds global
ranks 0 and 2, and the ``root_rank`` of a broadcast on it is a global rank
too. ``ProcessSet.rank()`` is this process's position within the set (the
order of allgather results).
"""

import ctypes
import threading

from hvd import _checks, _lib
from hvd._lib import C

_lock = threading.Lock()
_registered = {}  # id -> ProcessSet, the sets added since init() (not the global one)


class ProcessSet:
    """A set of global ranks. Usable once registered: passed to
    ``init(process_sets=[...])`` or to ``add_process_set()``."""

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks):
        self.ranks = _checks.rank_list(ranks)

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """Number of ranks in the set; None when the set is not registered."""
        if self.process_set_id is None:
            return None
        return _query(_lib.hvd_process_set_size(self.process_set_id), "process set size")

    def rank(self):
        """This process's rank within the set; None when the set is not
        registered. ValueError when this process is not a member."""
        if self.process_set_id is None:
            return None
        r = _lib.hvd_process_set_rank(self.process_set_id)
        if r == -1:
            raise ValueError(f"this process is not a member of {self}")
        return _query(r, "process set rank")

    def included(self):
        """Whether this process is a member; None when not registered."""
        if self.process_set_id is None:
            return None
        r = _lib.hvd_process_set_rank(self.process_set_id)
        return r != -1 and _query(r, "process set rank") >= 0

    def set_rank_of(self, global_rank):
        """Position of ``global_rank`` within the set (what the engine calls
        the root of a broadcast). ValueError when it is not a member."""
        global_rank = _checks.rank_value(global_rank, "root_rank")
        if self.process_set_id == C.GLOBAL_PROCESS_SET:
            return global_rank
        ranks = self._members()
        try:
            return ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"rank {global_rank} is not a member of {self}") from None

    def _members(self):
        if self.ranks:
            return self.ranks
        n = self.size()
        buf = (ctypes.c_int32 * n)()
        _lib.check(_lib.hvd_process_set_ranks(self.process_set_id, buf, n), "process set ranks")
        return list(buf)

    def __str__(self):
        return (f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
                f"mpi_comm={self.mpi_comm})")

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = C.GLOBAL_PROCESS_SET


def _query(value, what):
    """A process set figure from libhvd, or the error of a negative one:
    ValueError (as Horovod) before init() and for an unknown set."""
    if value >= 0:
        return value
    if -value == C.ERR_FAILED_PRECONDITION and _lib.hvd_is_initialized() != 1:
        raise _checks.not_initialized(what)
    if -value == C.ERR_NOT_FOUND:
        raise ValueError(f"{what}: {_lib.last_error()}")
    raise _lib.error(-value, what)


def _register(process_set):
    """The collective part of add_process_set: every rank, same order."""
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} is already registered")
    if _lib.hvd_is_initialized() != 1:
        raise _checks.not_initialized("add_process_set")
    _checks.registrable(process_set.ranks, _lib.hvd_size())
    with _lock:
        for other in _registered.values():
            if other.ranks == process_set.ranks:
                raise ValueError(f"a process set with ranks {process_set.ranks} exists already "
                                 f"(id {other.process_set_id})")
        n = len(process_set.ranks)
        ranks = (ctypes.c_int32 * max(n, 1))(*process_set.ranks)
        new_id = ctypes.c_int32()
        code = _lib.hvd_add_process_set(ranks, n, ctypes.byref(new_id))
        if code in (C.ERR_INVALID_ARGUMENT, C.ERR_ALREADY_EXISTS):
            raise ValueError(str(_lib.error(code, "add_process_set")))
        _lib.check(code, "add_process_set")
        process_set.process_set_id = new_id.value
        _registered[new_id.value] = process_set
    return process_set


def add_process_set(process_set):
    """Registers a process set (a ProcessSet or a sequence of global ranks)
    and returns it. Collective: every rank calls it, with the same ranks and
    in the same order of calls."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    return _register(process_set)


def remove_process_set(process_set):
    """Removes a registered process set (collective, like add_process_set).
    Returns False when there was nothing to remove (the global set, or a set
    not registered)."""
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"remove_process_set() takes a ProcessSet (what add_process_set() "
                        f"returned), not {type(process_set).__name__}")
    ps_id = process_set.process_set_id
    if ps_id is None or ps_id == C.GLOBAL_PROCESS_SET:
        return False
    with _lock:
        if _registered.get(ps_id) is not process_set:
            return False
        _lib.check(_lib.hvd_remove_process_set(ps_id), "remove_process_set")
        del _registered[ps_id]
        process_set._invalidate()
    return True


def _forget_all():
    """After shutdown: the ids belong to the old world."""
    with _lock:
        for ps in _registered.values():
            ps._invalidate()
        _registered.clear()
