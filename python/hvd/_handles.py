"""Handles of asynchronous operations.

A Handle holds the engine's handle ids (one per op; a grouped op has
several), every buffer the engine reads or writes (so that they stay alive
until the op is done, even if the caller drops its references) and the
function that turns the finished op into the caller's result (reading
engine-allocated outputs, copying back into non-contiguous tensors).

Every handle not yet synchronized sits in ``_in_flight``: a handle the
caller forgets still keeps its buffers alive, as Horovod's handle map does.

A device (CUDA) op is stream-ordered (docs/gpu.md, "Asynchronous
completion"): its wait returns once the op is launched on the device and the
caller's current stream waits for it there (hvd_wait_on_stream), without
waiting on the host for the device. Its buffers stay referenced, and its
engine handles held, until the device is done with them (``_on_device``:
looked at again at each new handle and wait, and released then).
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
# Device ops waited for on a stream, still running on the device: (ids, keep).
_on_device = []


class Handle:
    """An operation in flight. Pass it to poll() and synchronize()."""

    __slots__ = ("ids", "_keep", "_finish", "_stream", "_state", "_result", "_error", "_lock",
                 "__weakref__")

    _PENDING, _DONE = 0, 1

    def __init__(self, ids, keep, finish, stream=None):
        self.ids = tuple(ids)
        self._keep = keep        # buffers the engine uses
        self._finish = finish    # callable(ids) -> result, run once every op succeeded
        self._stream = stream    # device op: callable() -> the stream to order after it
        self._state = Handle._PENDING
        self._result = None
        self._error = None
        self._lock = threading.Lock()
        with _in_flight_lock:
            _in_flight.add(self)
        if _on_device:
            release_done_device_ops()

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
                stream = self._stream() if self._stream is not None else None
                if self._stream is None or _lib.hvd_wait_on_stream is None:
                    errors = [_wait_one(i, deadline) for i in self.ids]
                    self._complete(errors)
                else:
                    errors = [_wait_one(i, deadline, stream) for i in self.ids]
                    self._complete(errors, on_device=True)
        if self._error is not None:
            raise self._error
        return self._result

    def _complete(self, errors, on_device=False):
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
            with _in_flight_lock:
                if on_device:
                    # The device may still read or write the buffers.
                    _on_device.append((self.ids, self._keep))
                else:
                    for i in self.ids:
                        _lib.hvd_release(i)
                _in_flight.discard(self)
            self._state = Handle._DONE
            self._keep = None
            self._finish = None
            self._stream = None


def release_done_device_ops():
    """Releases the device ops the device is done with, and their buffers."""
    with _in_flight_lock:
        still = []
        for ids, keep in _on_device:
            if all(_lib.hvd_poll(i) != 0 for i in ids):  # done, or gone (shutdown)
                for i in ids:
                    _lib.hvd_release(i)
            else:
                still.append((ids, keep))
        _on_device[:] = still


def _wait_one(handle_id, deadline, stream=None):
    """None, or the HorovodInternalError of a failed op. Raises on timeout.
    With a stream (a device op): until the op is launched and `stream`
    ordered after it (hvd_wait_on_stream), not until it is done."""
    def wait(seconds):
        if stream is None:
            return _lib.hvd_wait(handle_id, seconds)
        return _lib.hvd_wait_on_stream(handle_id, stream, seconds)

    while True:
        slice_s = _WAIT_SLICE_SECONDS
        if deadline is not None:
            slice_s = min(slice_s, deadline - time.monotonic())
            if slice_s <= 0:
                slice_s = 1e-6
        code = wait(slice_s)
        if code == C.OK:
            return None
        if code == C.ERR_TIMEOUT:
            if _lib.hvd_poll(handle_id) == 0:
                if deadline is not None and time.monotonic() >= deadline:
                    raise HorovodInternalError(
                        f"timed out waiting for hvd operation (handle {handle_id})", code)
                continue  # (a device op may have been launched just now: ask again)
            # The slice ended just before the op did (or the op itself timed
            # out, e.g. a stall): now done, the wait returns its own status.
            code = wait(0.001)
            if code == C.OK:
                return None
        return _lib.error(code)


def forget_all():
    """After shutdown: the engines are gone and no longer touch any buffer."""
    with _in_flight_lock:
        _in_flight.clear()
        _on_device.clear()


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
