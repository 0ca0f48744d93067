"""Handles of asynchronous operations.

A Handle holds the engine's handle ids (one per op; a grouped op has
several), every buffer the engine reads or writes (so that they stay alive
until the op is done, even if the caller drops its references) and the
function that turns the finished op into the caller's result (reading
engine-allocated outputs, copying back into non-contiguous tensors).

Every handle not yet synchronized sits in ``_in_flight``: a handle the
caller forgets still keeps its buffers alive, as Horovod's handle map does.
"""

import threading
import time

from hvd import _checks, _lib
from hvd._lib import C
from hvd.exceptions import HorovodInternalError

# Longest single hvd_wait() call: between two calls Python runs its signal
# handlers, so Ctrl-C interrupts a wait.
_WAIT_SLICE_SECONDS = 1.0

_in_flight = set()
_in_flight_lock = threading.Lock()


class Handle:
    """An operation in flight. Pass it to poll() and synchronize()."""

    __slots__ = ("ids", "_keep", "_finish", "_state", "_result", "_error", "_lock", "__weakref__")

    _PENDING, _DONE = 0, 1

    def __init__(self, ids, keep, finish):
        self.ids = tuple(ids)
        self._keep = keep        # buffers the engine uses
        self._finish = finish    # callable(ids) -> result, run once every op succeeded
        self._state = Handle._PENDING
        self._result = None
        self._error = None
        self._lock = threading.Lock()
        with _in_flight_lock:
            _in_flight.add(self)

    def __repr__(self):
        state = "done" if self._state == Handle._DONE else "pending"
        return f"<hvd.Handle {list(self.ids)} {state}>"

    def poll(self):
        """True when every op of the handle is done (successfully or not)."""
        if self._state == Handle._DONE:
            return True
        for i in self.ids:
            r = _lib.hvd_poll(i)
            if r < 0:
                raise _lib.error(-r, "poll")
            if r == 0:
                return False
        return True

    def wait(self, timeout=None):
        """Waits for the ops, then returns the result (or raises the first
        op's error). ``timeout`` in seconds: HorovodInternalError if still
        pending then; the handle stays valid and may be waited on again."""
        with self._lock:
            if self._state == Handle._PENDING:
                deadline = None if timeout is None else time.monotonic() + timeout
                errors = [_wait_one(i, deadline) for i in self.ids]
                self._complete(errors)
        if self._error is not None:
            raise self._error
        return self._result

    def _complete(self, errors):
        try:
            failed = [e for e in errors if e is not None]
            if failed:
                self._error = failed[0]
            else:
                try:
                    self._result = self._finish(self.ids) if self._finish else None
                except HorovodInternalError as e:
                    self._error = e
        finally:
            for i in self.ids:
                _lib.hvd_release(i)
            self._state = Handle._DONE
            self._keep = None
            self._finish = None
            with _in_flight_lock:
                _in_flight.discard(self)


def _wait_one(handle_id, deadline):
    """None, or the HorovodInternalError of a failed op. Raises on timeout."""
    while True:
        slice_s = _WAIT_SLICE_SECONDS
        if deadline is not None:
            slice_s = min(slice_s, deadline - time.monotonic())
            if slice_s <= 0:
                slice_s = 1e-6
        code = _lib.hvd_wait(handle_id, slice_s)
        if code == C.OK:
            return None
        if code == C.ERR_TIMEOUT:
            if _lib.hvd_poll(handle_id) == 0:
                if deadline is not None and time.monotonic() >= deadline:
                    raise HorovodInternalError(
                        f"timed out waiting for hvd operation (handle {handle_id})", code)
                continue
            # The slice ended just before the op did (or the op itself timed
            # out, e.g. a stall): now done, hvd_wait returns its own status.
            code = _lib.hvd_wait(handle_id, 0.001)
            if code == C.OK:
                return None
        return _lib.error(code)


def forget_all():
    """After shutdown: the engines are gone and no longer touch any buffer."""
    with _in_flight_lock:
        _in_flight.clear()


def poll(handle):
    """True when the asynchronous operation behind ``handle`` is done.
    ValueError for an int (an unknown handle to Horovod), TypeError for
    anything else that is no handle."""
    if isinstance(handle, Handle):
        return handle.poll()
    if callable(handle):
        return True  # sparse allreduce: a function, evaluated by synchronize()
    raise _checks.not_a_handle(handle, "poll")


def synchronize(handle, timeout=None):
    """Waits for an asynchronous operation and returns its result; the
    errors of poll() for what is no handle (hvd._checks)."""
    if isinstance(handle, Handle):
        return handle.wait(timeout)
    if callable(handle):
        return handle()
    raise _checks.not_a_handle(handle, "synchronize")
