"""hvd_abort (Runtime::abort, docs/engine.md "Abort") end to end under hvdrun:
rank 0 waits in an allreduce that no other rank calls, a thread of rank 0
aborts after 0.3 s; the allreduce raises HorovodInternalError at once, later
calls fail at once, shutdown() takes no collective step, and init() builds a
fresh world in the same process. The other ranks, waiting on an op rank 0
never calls (with 3 ranks, on a process set without rank 0), see their world
break when rank 0's sockets go, and fail too.
Every wait has a deadline (handle waits take timeouts; a hang would also end
in the engine's no-progress check, 10 s)."""

import threading
import time

import pytest
import torch

import hvd.torch as hvd
from hvd import _lib
from hvd.exceptions import HorovodInternalError

REASON = "test_abort: the world changed"


def abort_after(seconds):
    """Calls hvd_abort from its own thread after `seconds`; returns the
    thread and a list that receives (monotonic time of the call, code)."""
    called = []

    def run():
        time.sleep(seconds)
        at = time.monotonic()
        called.append((at, _lib.hvd_abort(REASON.encode())))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, called


def test_abort_fails_pending_and_later_ops_then_recovers_in_place():
    rank, size = hvd.rank(), hvd.size()
    others = hvd.add_process_set(list(range(1, size))) if size > 2 else None
    hvd.allreduce(torch.ones(4), name="before")  # the world works

    if rank == 0:
        # Blocked in a collective that no other rank calls.
        handle = hvd.allreduce_async(torch.ones(1 << 16), name="only_rank_0")
        aborter, called = abort_after(0.3)
        with pytest.raises(HorovodInternalError) as failed:
            handle.wait(timeout=5.0)
        returned = time.monotonic()
        aborter.join(timeout=5.0)
        assert called and called[0][1] == 0, called
        waited = returned - called[0][0]
        assert 0 <= waited < 1.0, f"the allreduce ended {waited:.3f} s after the abort"
        message = str(failed.value)
        assert REASON in message and "rank 0" in message, message

        # Later calls fail at once, with the same reason; a second abort changes nothing.
        assert _lib.hvd_abort(b"a second reason") == 0
        start = time.monotonic()
        with pytest.raises(HorovodInternalError) as later:
            hvd.allreduce(torch.ones(4), name="after")
        assert time.monotonic() - start < 1.0
        assert REASON in str(later.value) and "second reason" not in str(later.value)
    else:
        # Waits on an op that no other rank calls: on the global set with two
        # ranks; with more, on a process set without rank 0, which only the
        # runtime's own abort can fail at once (rank 0's abort breaks this
        # rank's global set, whose engine then aborts every other set).
        handle = hvd.allreduce_async(torch.ones(8), name=f"only_rank_{rank}",
                                     process_set=others if others else hvd.global_process_set)
        start = time.monotonic()
        with pytest.raises(HorovodInternalError):
            handle.wait(timeout=5.0)
        waited = time.monotonic() - start
        assert waited < 3.0, f"rank {rank}'s op failed only after {waited:.3f} s"

    # No collective step: shutdown returns at once.
    start = time.monotonic()
    hvd.shutdown()
    took = time.monotonic() - start
    assert took < 2.0, f"shutdown took {took:.3f} s after the abort"
    assert not hvd.is_initialized()
    assert _lib.hvd_abort(b"not initialized") == 0  # nothing to abort: a no-op

    # In place: a fresh world in the same process.
    hvd.init()
    assert (hvd.rank(), hvd.size()) == (rank, size)
    total = hvd.allreduce(torch.full((4,), float(rank + 1)), op=hvd.Sum, name="fresh")
    assert total.tolist() == [size * (size + 1) / 2] * 4
