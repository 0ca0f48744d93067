"""Elastic training, framework-free part (horovod.common.elastic's API).

A training function wrapped by ``run`` (hvd.torch.elastic.run) is given a
State. Inside, the program commits the state now and then (``state.commit()``:
save it, then check for host updates). When a collective fails
(HorovodInternalError: a peer died or the ranks went out of step), every
surviving worker rolls back to its last commit (``restore()``), leaves and
rejoins the job in place (``reset``: hvd.shutdown() then hvd.init(), a new
rendezvous round, no re-import, no new process), takes the state of the
lowest rank holding the highest commit (``sync()``; Horovod: rank 0) and
calls the function again. When the set of hosts changed
(HostsUpdatedInterrupt) it does the same without the rollback.

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
        # The job-wide number of the commit this worker holds (0: the start):
        # +1 at every commit; a sync sets it to the number of the commit it
        # took, so every member of a round agrees on it. hvdrun learns it
        # (hvd_elastic_committed) and says when a round restarts below the
        # job's last commit: every worker that held it died.
        self._commit = 0
        self._sync_root_ran = False  # sync_root() ran in this sync
        self._took_commit = False    # this sync gave this worker another commit

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
        self._commit += 1
        _lib.hvd_elastic_committed(self._commit, 0)
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
        rank: the lowest of the ranks holding the highest commit (survivors of
        a reset; a replacement worker holds none), so rank 0 when nothing was
        committed (a fresh start). Every worker's commit number becomes that
        rank's: after the sync all hold that commit. Horovod always takes
        rank 0, whose state is lost when rank 0 is the replaced one."""
        import numpy as np
        from hvd import numpy as hnp
        n = hnp.size()
        # One Max: the highest commit, then the lowest rank holding it.
        mine = self._commit * n + (n - 1 - hnp.rank())
        best = int(hnp.allreduce(np.array([mine], dtype=np.int64), op=hnp.Max)[0])
        commit = best // n
        self._took_commit = commit != self._commit
        self._commit = commit
        self._sync_root_ran = True
        return n - 1 - best % n

    def sync_needed(self, skip):
        """Collective, at the start of every try of ``run``: whether this
        round syncs. A rank may skip the sync (its update only removed hosts)
        only when every rank may: a worker new to the round (a replacement, a
        promoted spare) always syncs, and the members' host updates may not
        have told them of it (issue 27: a removal seen alone while a spare
        joined the same round left the ranks out of step until the stall
        check's verdict)."""
        import numpy as np
        from hvd import numpy as hnp
        mine = np.array([0 if skip else 1], dtype=np.int64)
        return int(hnp.allreduce(mine, op=hnp.Max)[0]) > 0

    def _synced(self):
        """After a sync by run(): tells hvdrun the commit the round restarted
        from (a State whose sync() does not use sync_root() tells nothing)."""
        if self._sync_root_ran:
            _lib.hvd_elastic_committed(self._commit, 1)
        self._sync_root_ran = False

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
    (re-raising) after reset_limit() resets in a row without a commit, and
    at a no-progress verdict that comes right after the reset of another:
    the program's calls are out of step, which no reset mends (a loop that
    commits before its out-of-step call would commit at every try)."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        limit = reset_limit()
        skip_sync = False
        failed_resets = 0
        verdicts = 0  # no-progress verdicts in a row
        while True:
            commits = state._commits
            try:
                if state.sync_needed(skip_sync):
                    state._sync_root_ran = False
                    state.sync()
                    state._synced()
                return func(state, *args, **kwargs)
            except HorovodInternalError as e:
                failed_resets = 0 if state._commits != commits else failed_resets + 1
                verdicts = verdicts + 1 if e.no_progress else 0
                if failed_resets >= limit or verdicts > 1:
                    raise
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset()
            state.on_reset()

    return wrapper
