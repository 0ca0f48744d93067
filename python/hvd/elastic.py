"""Elastic training, framework-free part (horovod.common.elastic's API).

A training function wrapped by ``run`` (hvd.torch.elastic.run) is given a
State. Inside, the program commits the state now and then (``state.commit()``:
save it, then check for host updates). When a collective fails
(HorovodInternalError: a peer died or the ranks went out of step), every
surviving worker rolls back to its last commit (``restore()``), leaves and
rejoins the job in place (``reset``: hvd.shutdown() then hvd.init(), a new
rendezvous round, no re-import, no new process), takes the state of the
lowest rank that has committed (``sync()``; Horovod: rank 0) and calls the
function again. When the set of hosts changed (HostsUpdatedInterrupt) it
does the same without the rollback.

What re-forms the world around the survivors is the launcher's business:
hvdrun's elastic mode (docs/elastic.md) replaces a failed worker on its host.
Host updates come from the rendezvous's membership watch stream, which
libhvd holds from hvd.init() to hvd.shutdown(): a worker waiting to join
(a replacement, a new host's worker) is an added host; hosts that hvdrun
reports lost are removed ones.
"""

import functools
import os
import queue
import time

from hvd import _lib
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt


def spares():
    """The hot spares the job keeps (hvdrun --spares K): K, 0 without."""
    try:
        return int(os.environ.get("HVD_SPARES", "0") or 0)
    except ValueError:
        return 0


def started_as_spare():
    """True in a worker that started as a hot spare: it waited in hvd.init()
    until hvdrun promoted it into the slot of a failed worker (hvd.init()
    returns only then), and joined the job as a replacement."""
    return os.environ.get("HVD_SPARE") is not None


class HostUpdateResult:
    """What a host update did (Horovod's flags)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class State:
    """Elastic state: what a worker saves at commit, restores after a failed
    collective and syncs from rank 0 after a reset.

    ``bcast_object(obj)`` broadcasts a picklable object from rank 0 and
    returns it; ``get_rank()`` is this worker's rank."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []
        self._commits = 0  # run_fn tells a reset loop from progress by it

    def register_reset_callbacks(self, callbacks):
        """Functions called (in order) after every reset, e.g. to rescale the
        learning rate to the new world size."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """A host update from the launcher (timestamp, HostUpdateResult)."""
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Saves the state, then raises HostsUpdatedInterrupt on every rank if
        the hosts changed since the last check."""
        self.save()
        self._commits += 1
        self.check_host_updates()

    def check_host_updates(self):
        """Collective: every rank learns rank 0's view of the host updates,
        so that all of them raise HostsUpdatedInterrupt together or none."""
        last = prev = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        self._take_host_updates()
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if timestamp > last:
                last = timestamp
                update |= result
        prev, self._last_updated_timestamp, update = self._bcast_object((prev, last, update))
        if self._last_updated_timestamp > prev:
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

    def _take_host_updates(self):
        """The membership changes libhvd's watch stream told of since the
        last call, queued as host messages (a worker waiting to join is an
        added host: it is let in at the reset)."""
        bits = _lib.hvd_elastic_host_updates()
        update = HostUpdateResult.no_update
        if bits & _lib.HVD_HOSTS_ADDED:
            update |= HostUpdateResult.added
        if bits & _lib.HVD_HOSTS_REMOVED:
            update |= HostUpdateResult.removed
        if update:
            self.on_hosts_updated(time.time(), update)

    def sync_root(self):
        """Collective: the rank a sync takes the state from, the same on every
        rank: the lowest rank that has committed (a survivor of a reset; a
        replacement worker has not), else 0 (a fresh start). Horovod always
        takes rank 0, whose state is lost when rank 0 is the replaced one."""
        import numpy as np
        from hvd import numpy as hnp
        n = hnp.size()
        mine = hnp.rank() if self._commits > 0 else n
        root = int(hnp.allreduce(np.array([mine], dtype=np.int64), op=hnp.Min)[0])
        return 0 if root >= n else root

    def _broadcast(self, obj, root):
        if root == 0:
            return self._bcast_object(obj)
        return self._bcast_object(obj, root_rank=root)

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def reset(self):
        pass


class ObjectState(State):
    """State made of plain attributes: ``ObjectState(bcast, rank, epoch=0,
    batch=0)`` gives ``state.epoch`` and ``state.batch``, saved at commit,
    restored on failure and broadcast from rank 0 at sync."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        self._sync_attrs(self.sync_root())

    def _sync_attrs(self, root):
        if self._saved_state:
            self._saved_state = self._broadcast(self._saved_state, root)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def reset_limit():
    """Resets in a row without a commit between them after which run() gives
    up: HVD_RESET_LIMIT (HOROVOD_RESET_LIMIT), default 10. A failure that
    recurs before any progress (a bug, not a lost worker) then ends the
    program with that failure instead of looping forever."""
    for name in ("HVD_RESET_LIMIT", "HOROVOD_RESET_LIMIT"):
        value = os.environ.get(name)
        if value:
            try:
                limit = int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not a whole number") from None
            if limit < 1:
                raise ValueError(f"{name}={value!r} must be at least 1")
            return limit
    return 10


def run_fn(func, reset):
    """``func(state, ...)`` run elastically: sync, call; on HorovodInternalError
    restore + reset + sync + call again; on HostsUpdatedInterrupt reset
    (+ sync unless the update only removed hosts) + call again. Gives up
    (re-raising) after reset_limit() resets in a row without a commit."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        limit = reset_limit()
        skip_sync = False
        failed_resets = 0
        while True:
            commits = state._commits
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError:
                failed_resets = 0 if state._commits != commits else failed_resets + 1
                if failed_resets >= limit:
                    raise
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset()
            state.on_reset()

    return wrapper
