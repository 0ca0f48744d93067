"""Worker of test_gpu_routing.py: ops with a device (device = this rank, as
each rank has its own GPU) enqueued through the C ABI with host buffers, and
CPU ops beside them, in one process.

    gpu_routing_worker.py routed PLUGIN_LIBRARY   HVD_GPU_TRANSPORT names the
        fakecuda test plugin: device ops give the right results and went
        through the plugin (its call counters); CPU ops did not.
        The engine's device work went through the plugin's device_* functions
        (fusion buffer, scaling, outputs: its device counters) on the
        device's communication stream, ordered after the op's stream (its
        late-written inputs are read) or its ready event, and all device
        memory is freed at shutdown.
    gpu_routing_worker.py staged PLUGIN_LIBRARY   HVD_GPU_TRANSPORT=gloo with
        fakecuda as the staging plugin: every op right, run on the CPU
        transport (no plugin collective), staged through the plugin's copies.
    gpu_routing_worker.py hierarchical PLUGIN_LIBRARY hier|flat
        HVD_HIERARCHICAL_ALLREDUCE on, fakecuda the GPU transport: device
        allreduces (sum and average, float32 and int32, counts uneven across
        the host's ranks, a fused group) give the right results; "hier": they
        ran as the plugin's reduce-scatter and allgather (no plugin
        allreduce) over two plugin worlds, the other ops on the flat one;
        "flat": as plain plugin allreduces on one world.
    gpu_routing_worker.py v1                      a CUDA plugin of ABI version
        1: device ops fail saying it has no device functions; CPU ops work.
    gpu_routing_worker.py refused                 the GPU transport cannot run
        here: each device op fails with the reason, CPU ops still work.

Prints "ok rank R" at the end; any failed check raises (non-zero exit).
"""
import ctypes
import os
import sys
import time

import numpy as np

from hvd import _lib
from hvd._lib import C, make_op

WAIT_S = 60.0
TYPES = {np.float32: C.FLOAT32, np.int64: C.INT64, np.float64: C.FLOAT64, np.int32: C.INT32}


def enqueue(op):
    h = ctypes.c_int64()
    _lib.check(_lib.hvd_enqueue(ctypes.byref(op), ctypes.byref(h)), "enqueue")
    return h.value


def finish(h):
    """(code, message) of a finished op; the handle is released."""
    code = _lib.hvd_wait(h, WAIT_S)
    message = _lib.last_error() if code != C.OK else ""
    return code, message


def op_for(op_type, array, name, device, output=True, **fields):
    dims = (ctypes.c_int64 * array.ndim)(*array.shape)
    ptr = array.ctypes.data
    return make_op(op_type=op_type, name=name.encode(), input=ptr,
                   output=ptr if output else None, shape=dims, ndim=array.ndim,
                   dtype=TYPES[array.dtype.type], device=device, **fields), dims


def run(op_type, array, name, device, output=True, **fields):
    op, dims = op_for(op_type, array, name, device, output, **fields)
    h = enqueue(op)
    code, message = finish(h)
    return h, code, message


def engine_output(h, like, rows):
    out = np.empty((rows,) + like.shape[1:], dtype=like.dtype)
    _lib.check(_lib.hvd_handle_copy_output(h, out.ctypes.data, out.nbytes), "copy output")
    return out


def release(h):
    _lib.check(_lib.hvd_release(h), "release")


def group(rank, named, **fields):
    """Enqueues [(array, name), ...] as one group of allreduces on device
    `rank` (in place) and waits for every op."""
    made = [op_for(C.OPTYPE_ALLREDUCE, a, name, rank, **fields) for a, name in named]
    ops = (_lib.hvd_op * len(made))(*[op for op, _ in made])
    handles = (ctypes.c_int64 * len(made))()
    _lib.check(_lib.hvd_enqueue_group(ops, len(made), handles), "enqueue_group")
    for h in handles:
        code, message = finish(h)
        assert code == C.OK, message
        release(h)


def cpu_allreduce(rank, size, name):
    a = np.full(4, rank + 1, dtype=np.float32)
    h, code, message = run(C.OPTYPE_ALLREDUCE, a, name, C.DEVICE_CPU, reduce_op=C.OP_SUM)
    assert code == C.OK, message
    release(h)
    assert (a == size * (size + 1) / 2).all(), a


def plugin_loaded(library):
    try:
        ctypes.CDLL(library, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        return True
    except OSError:
        return False


def fake_of(library):
    fake = ctypes.CDLL(library)
    for fn in (fake.fakecuda_calls, fake.fakecuda_device_calls):
        fn.restype = ctypes.c_longlong
        fn.argtypes = [ctypes.c_char_p]
    fake.fakecuda_last_stream.restype = ctypes.c_void_p
    fake.fakecuda_last_stream.argtypes = [ctypes.c_char_p]
    for name in ("fakecuda_comm_stream", "fakecuda_stream_create", "fakecuda_event_create"):
        getattr(fake, name).restype = ctypes.c_void_p
        getattr(fake, name).argtypes = []
    fake.fakecuda_stream_write.restype = ctypes.c_int32
    fake.fakecuda_stream_write.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_size_t, ctypes.c_long]
    fake.fakecuda_stream_synchronize.restype = ctypes.c_int32
    for name in ("fakecuda_stream_synchronize", "fakecuda_stream_destroy",
                 "fakecuda_event_destroy"):
        getattr(fake, name).argtypes = [ctypes.c_void_p]
    fake.fakecuda_event_record.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    fake.fakecuda_cached_alloc.restype = ctypes.c_void_p
    fake.fakecuda_cached_alloc.argtypes = [ctypes.c_size_t, ctypes.c_void_p]
    fake.fakecuda_cached_free.restype = None
    fake.fakecuda_cached_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    fake.fakecuda_violations.restype = ctypes.c_longlong
    fake.fakecuda_violations.argtypes = []
    return fake


def every_op(rank, size, tag):
    """Every device op (device = rank) with its result checked: allreduce
    sum, average with pre/postscale, min, a fused group with average and
    scaling, broadcast, uneven allgather, alltoall, reducescatter."""
    a = np.full(5, rank + 1, dtype=np.float32)
    h, code, message = run(C.OPTYPE_ALLREDUCE, a, f"{tag}.sum", rank, reduce_op=C.OP_SUM)
    assert code == C.OK, message
    release(h)
    assert (a == size * (size + 1) / 2).all(), a
    b = np.arange(6, dtype=np.float64) * (rank + 1)
    h, code, message = run(C.OPTYPE_ALLREDUCE, b, f"{tag}.avg", rank, reduce_op=C.OP_AVERAGE,
                           prescale_factor=2.0, postscale_factor=0.5)
    assert code == C.OK, message
    release(h)
    assert np.allclose(b, np.arange(6) * (size + 1) / 2.0), b
    c = np.full(3, rank - 5, dtype=np.int64)
    h, code, message = run(C.OPTYPE_ALLREDUCE, c, f"{tag}.min", rank, reduce_op=C.OP_MIN)
    assert code == C.OK, message
    release(h)
    assert (c == -5).all(), c
    x = np.full(3, rank + 1, dtype=np.float32)
    y = np.full(2, 10 * (rank + 1), dtype=np.float32)
    group(rank, [(x, f"{tag}.g.x"), (y, f"{tag}.g.y")], reduce_op=C.OP_AVERAGE,
          prescale_factor=2.0, postscale_factor=3.0)
    mean = (size + 1) / 2.0
    assert np.allclose(x, 6 * mean) and np.allclose(y, 60 * mean), (x, y)
    d = np.full(4, rank, dtype=np.int64)
    h, code, message = run(C.OPTYPE_BROADCAST, d, f"{tag}.bcast", rank, root_rank=size - 1)
    assert code == C.OK, message
    release(h)
    assert (d == size - 1).all(), d
    e = np.full((rank + 1, 2), rank, dtype=np.float32)
    h, code, message = run(C.OPTYPE_ALLGATHER, e, f"{tag}.gather", rank, output=False)
    assert code == C.OK, message
    got = engine_output(h, e, size * (size + 1) // 2)
    release(h)
    assert (got == np.concatenate([np.full((r + 1, 2), r, np.float32) for r in range(size)])).all()
    f = (np.arange(size, dtype=np.int64) + 10 * rank).reshape(size, 1)
    h, code, message = run(C.OPTYPE_ALLTOALL, f, f"{tag}.a2a", rank, output=False)
    assert code == C.OK, message
    got = engine_output(h, f, size)
    release(h)
    assert (got.reshape(-1) == np.array([rank + 10 * k for k in range(size)])).all(), got
    g = np.ones((size, 3), dtype=np.float32) * (np.arange(size, dtype=np.float32)[:, None] + 1)
    h, code, message = run(C.OPTYPE_REDUCESCATTER, g, f"{tag}.rs", rank, output=False,
                           reduce_op=C.OP_AVERAGE)
    assert code == C.OK, message
    got = engine_output(h, g, 1)
    release(h)
    assert (got == rank + 1).all(), got


def staged(rank, size, library):
    cpu_allreduce(rank, size, "cpu.before")
    every_op(rank, size, "staged")
    fake = fake_of(library)
    dev = lambda kind: fake.fakecuda_device_calls(kind.encode())  # noqa: E731
    # The collectives ran on the CPU transport, none through the plugin...
    for op in ("create", "allreduce", "allgatherv", "broadcast", "alltoallv", "reducescatter"):
        assert fake.fakecuda_calls(op.encode()) == 0, op
    # ...staged through its device functions: pinned host memory, and a copy
    # to the host and one back per collective (8 collectives, beside the
    # engine's own packing and output copies).
    assert dev("open") == 1, dev("open")
    assert dev("alloc_pinned") >= 2, dev("alloc_pinned")
    assert dev("copy") >= 16, dev("copy")
    assert dev("synchronize") >= 16, dev("synchronize")
    cpu_allreduce(rank, size, "cpu.after")
    return fake


def hierarchical_allreduces(rank, size):
    """Device allreduces whose counts do not divide among a host's ranks;
    returns how many allreduce batches ran."""
    batches = 0
    for n in (1, 7, 1001):
        a = np.arange(n, dtype=np.float32) + rank
        h, code, message = run(C.OPTYPE_ALLREDUCE, a, f"hier.sum.f32.{n}", rank,
                               reduce_op=C.OP_SUM)
        assert code == C.OK, message
        release(h)
        want = size * np.arange(n, dtype=np.float32) + size * (size - 1) / 2
        assert np.array_equal(a, want), (n, a[:8], want[:8])
        b = np.full(n, 2 * (rank + 1), dtype=np.int32)  # sums to size * (size + 1)
        h, code, message = run(C.OPTYPE_ALLREDUCE, b, f"hier.avg.i32.{n}", rank,
                               reduce_op=C.OP_AVERAGE)
        assert code == C.OK, message
        release(h)
        assert (b == size + 1).all(), (n, b[:8])
        c = np.full(n, rank + 1, dtype=np.int32)
        h, code, message = run(C.OPTYPE_ALLREDUCE, c, f"hier.sum.i32.{n}", rank,
                               reduce_op=C.OP_SUM)
        assert code == C.OK, message
        release(h)
        assert (c == size * (size + 1) // 2).all(), (n, c[:8])
        d = np.arange(n, dtype=np.float32) * (rank + 1)
        h, code, message = run(C.OPTYPE_ALLREDUCE, d, f"hier.avg.f32.{n}", rank,
                               reduce_op=C.OP_AVERAGE, prescale_factor=2.0,
                               postscale_factor=0.5)
        assert code == C.OK, message
        release(h)
        assert np.allclose(d, np.arange(n) * (size + 1) / 2.0), (n, d[:8])
        batches += 4
    x = np.full(3, rank + 1, dtype=np.float32)
    y = np.full(2, 10 * (rank + 1), dtype=np.float32)
    group(rank, [(x, "hier.g.x"), (y, "hier.g.y")], reduce_op=C.OP_AVERAGE,
          prescale_factor=2.0, postscale_factor=3.0)
    mean = (size + 1) / 2.0
    assert np.allclose(x, 6 * mean) and np.allclose(y, 60 * mean), (x, y)
    return batches + 1


def hierarchical(rank, size, library, expect):
    cpu_allreduce(rank, size, "cpu.before")
    batches = hierarchical_allreduces(rank, size)
    fake = fake_of(library)
    calls = lambda op: fake.fakecuda_calls(op.encode())  # noqa: E731
    if expect == "hier":
        # (a) and (c) on the plugin's world of this host, every other op on
        # its world of every rank; (b) on gloo, so no plugin allreduce.
        assert calls("create") == 2, calls("create")
        assert calls("allreduce") == 0, calls("allreduce")
        assert calls("reducescatter") == batches, (calls("reducescatter"), batches)
        assert calls("allgatherv") == batches, (calls("allgatherv"), batches)
    else:
        assert calls("create") == 1, calls("create")
        assert calls("allreduce") == batches, (calls("allreduce"), batches)
        assert calls("reducescatter") == 0, calls("reducescatter")
    d = np.full(4, rank, dtype=np.int64)
    h, code, message = run(C.OPTYPE_BROADCAST, d, "hier.bcast", rank, root_rank=size - 1)
    assert code == C.OK, message
    release(h)
    assert (d == size - 1).all(), d
    assert calls("broadcast") == 1, calls("broadcast")
    every_op(rank, size, "hier.every")
    cpu_allreduce(rank, size, "cpu.after")
    print(f"hierarchical {expect}: {batches} allreduce batches checked", flush=True)
    return fake


def v1(rank, size):
    a = np.full(2, 1, dtype=np.float32)
    h, code, message = run(C.OPTYPE_ALLREDUCE, a, "dev.v1", rank, reduce_op=C.OP_SUM)
    release(h)
    assert code == C.ERR_FAILED_PRECONDITION, (code, message)
    assert "has ABI version 1: no device functions; device ops need version 2" in message, message
    assert "\n" not in message, message
    print(f"device op refused: {message}", flush=True)
    cpu_allreduce(rank, size, "cpu.v1")


def routed(rank, size, library):
    # CPU ops first: they never load the GPU transport's plugin.
    cpu_allreduce(rank, size, "cpu.before")
    assert not plugin_loaded(library), "the plugin was loaded before the first device op"

    a = np.full(5, rank + 1, dtype=np.float32)
    h, code, message = run(C.OPTYPE_ALLREDUCE, a, "dev.sum", rank, reduce_op=C.OP_SUM)
    assert code == C.OK, message
    release(h)
    assert (a == size * (size + 1) / 2).all(), a
    assert plugin_loaded(library), "a device op ran but the plugin is not loaded"
    fake = ctypes.CDLL(library)
    fake.fakecuda_calls.restype = ctypes.c_longlong
    fake.fakecuda_calls.argtypes = [ctypes.c_char_p]
    calls = lambda op: fake.fakecuda_calls(op.encode())  # noqa: E731
    assert calls("create") == 1 and fake.fakecuda_device() == rank
    assert calls("allreduce") == 1
    fake = fake_of(library)
    dev = lambda kind: fake.fakecuda_device_calls(kind.encode())  # noqa: E731
    assert dev("open") == 1, "no device context was opened for the device ops"
    # Plugin ABI version 4: the batch ends with its completion event, which
    # the engine's completion thread polls (no device_synchronize).
    assert dev("event_record") >= 1, "the device batch did not record its completion event"
    assert dev("event_query") >= 1, "the batch's completion event was never polled"

    cpu_allreduce(rank, size, "cpu.between")
    assert calls("allreduce") == 1, "a CPU allreduce went through the GPU transport"

    # Average with scaling (the engine's pre/postscale) on int64 and float64.
    b = np.arange(6, dtype=np.float64) * (rank + 1)
    h, code, message = run(C.OPTYPE_ALLREDUCE, b, "dev.avg", rank, reduce_op=C.OP_AVERAGE,
                           prescale_factor=2.0, postscale_factor=0.5)
    assert code == C.OK, message
    release(h)
    assert dev("scale") == 2, ("prescale and the average's end go through device_scale",
                               dev("scale"))
    expected = np.arange(6) * (size + 1) / 2.0
    assert np.allclose(b, expected), (b, expected)
    c = np.full(3, rank - 5, dtype=np.int64)
    h, code, message = run(C.OPTYPE_ALLREDUCE, c, "dev.min", rank, reduce_op=C.OP_MIN)
    assert code == C.OK, message
    release(h)
    assert (c == -5).all(), c
    assert calls("allreduce") == 3

    # Broadcast from the last rank.
    d = np.full(4, rank, dtype=np.int64)
    h, code, message = run(C.OPTYPE_BROADCAST, d, "dev.bcast", rank, root_rank=size - 1)
    assert code == C.OK, message
    release(h)
    assert (d == size - 1).all(), d
    assert calls("broadcast") == 1

    # Allgather with uneven rows (rank r gives r + 1 rows of 2).
    e = np.full((rank + 1, 2), rank, dtype=np.float32)
    allocs, copies = dev("alloc"), dev("copy")
    h, code, message = run(C.OPTYPE_ALLGATHER, e, "dev.gather", rank, output=False)
    assert code == C.OK, message
    assert dev("alloc") == allocs + 1, "the output was not allocated in device memory"
    rows = size * (size + 1) // 2
    got = engine_output(h, e, rows)
    assert dev("copy") == copies + 1, "hvd_handle_copy_output did not copy through the device"
    release(h)
    assert (got == np.concatenate([np.full((r + 1, 2), r, np.float32) for r in range(size)])).all()
    assert calls("allgatherv") == 1

    # Alltoall, even: row k goes to rank k.
    f = (np.arange(size, dtype=np.int64) + 10 * rank).reshape(size, 1)
    h, code, message = run(C.OPTYPE_ALLTOALL, f, "dev.a2a", rank, output=False)
    assert code == C.OK, message
    got = engine_output(h, f, size)
    release(h)
    assert (got.reshape(-1) == np.array([rank + 10 * k for k in range(size)])).all(), got
    assert calls("alltoallv") == 1

    # Reducescatter of size rows: this rank gets the sum of row `rank`.
    g = np.ones((size, 3), dtype=np.float32) * (np.arange(size, dtype=np.float32)[:, None] + 1)
    h, code, message = run(C.OPTYPE_REDUCESCATTER, g, "dev.rs", rank, output=False,
                           reduce_op=C.OP_SUM)
    assert code == C.OK, message
    got = engine_output(h, g, 1)
    release(h)
    assert (got == size * (rank + 1)).all(), got
    assert calls("reducescatter") == 1

    # A group of two device allreduces: fused into one plugin call, packed
    # and unpacked in the device fusion buffer with one batched copy each.
    before = calls("allreduce")
    allocs, copies, entries = dev("alloc"), dev("copy"), dev("copy_entries")
    x = np.full(3, rank + 1, dtype=np.float32)
    y = np.full(2, 10 * (rank + 1), dtype=np.float32)
    group(rank, [(x, "dev.group.x"), (y, "dev.group.y")], reduce_op=C.OP_SUM)
    total = size * (size + 1) / 2
    assert (x == total).all() and (y == 10 * total).all(), (x, y)
    assert calls("allreduce") == before + 1, "the group was not one fused plugin call"
    assert dev("alloc") == allocs + 1, "the fusion buffer is not device memory"
    assert dev("copy") == copies + 2 and dev("copy_entries") == entries + 4, \
        (dev("copy") - copies, dev("copy_entries") - entries)

    stream_contract(fake, rank, size)
    stream_ordered(fake, rank, size)
    python_handles(fake, rank, size)

    every_op(rank, size, "again")

    cpu_allreduce(rank, size, "cpu.after")
    assert calls("create") == 1, "the GPU transport was created more than once"
    return fake


def stream_contract(fake, rank, size):
    """The framework's stream S (asynchronous, fakecuda's) produces the
    inputs late: a "kernel" on S writes them after 50 ms, and the ops are
    enqueued at once. They must read them only after S's work (the device's
    communication stream waits for S on the device, or for the op's ready
    event), run on the communication stream, never on S, and complete with
    the results in place."""
    dev = lambda kind: fake.fakecuda_device_calls(kind.encode())  # noqa: E731
    stream = fake.fakecuda_stream_create()
    ones = [np.ones(2, np.float32), np.ones(3, np.float32)]
    s1, s2 = np.zeros(2, np.float32), np.zeros(3, np.float32)
    for dst, src in ((s1, ones[0]), (s2, ones[1])):
        assert fake.fakecuda_stream_write(stream, dst.ctypes.data, src.ctypes.data, dst.nbytes,
                                          50000) == C.OK
    waits = dev("stream_wait")
    group(rank, [(s1, "dev.stream.1"), (s2, "dev.stream.2")], reduce_op=C.OP_SUM, stream=stream)
    assert (s1 == size).all() and (s2 == size).all(), ("read before S produced it", s1, s2)
    comm = fake.fakecuda_comm_stream()
    assert comm and comm != stream
    assert fake.fakecuda_last_stream(b"collective") == comm, "the collective ran on S"
    assert fake.fakecuda_last_stream(b"device") == comm, "the device work ran on S"
    assert dev("stream_wait") > waits, "the communication stream never waited for S"

    # With a ready event recorded on S after the input was produced (as
    # hvd.torch records one at enqueue): the communication stream waits for
    # the event, not for S's later work (here a write 2 s later, which the op
    # must neither wait for nor see).
    event = fake.fakecuda_event_create()
    x, out = np.zeros(4, np.float32), np.zeros(4, np.float32)
    two, late = np.full(4, 2, np.float32), np.full(4, 100, np.float32)
    fake.fakecuda_stream_write(stream, x.ctypes.data, two.ctypes.data, x.nbytes, 50000)
    fake.fakecuda_event_record(event, stream)
    fake.fakecuda_stream_write(stream, x.ctypes.data, late.ctypes.data, x.nbytes, 2000000)
    event_waits = dev("event_wait")
    dims = (ctypes.c_int64 * 1)(4)
    op = make_op(op_type=C.OPTYPE_ALLREDUCE, name=b"dev.event", input=x.ctypes.data,
                 output=out.ctypes.data, shape=dims, ndim=1, dtype=C.FLOAT32, device=rank,
                 reduce_op=C.OP_SUM, stream=stream, ready_event=event)
    code, message = finish(enqueue(op))
    assert code == C.OK, message
    assert (out == 2 * size).all(), ("the op did not read what the event marked", out)
    assert dev("event_wait") == event_waits + 1, "the op's ready event was not waited for"
    assert fake.fakecuda_stream_synchronize(stream) == C.OK
    assert (x == 100).all()  # S's late write did run, after the op
    fake.fakecuda_stream_destroy(stream)
    fake.fakecuda_event_destroy(event)


def cached_array(fake, stream, n, dtype=np.float32):
    """An array over a block of fakecuda's caching allocator, allocated on
    `stream` (as torch allocates a CUDA tensor on the current stream)."""
    nbytes = n * np.dtype(dtype).itemsize
    ptr = fake.fakecuda_cached_alloc(nbytes, stream)
    assert ptr, "fakecuda_cached_alloc failed"
    return np.frombuffer((ctypes.c_char * nbytes).from_address(ptr), dtype=dtype)


def done_then_release(h):
    """As hvd's Python handles do for a device op waited on a stream: hold
    it until the device is done with it, then release it."""
    deadline = time.monotonic() + WAIT_S
    while _lib.hvd_poll(h) == 0:
        assert time.monotonic() < deadline, f"handle {h} never completed on the device"
        time.sleep(0.001)
    release(h)


def stream_ordered(fake, rank, size):
    """Issue 28, with fakecuda's events (plugin ABI version 4): a device op
    waited on the caller's stream S (hvd_wait_on_stream) returns once it is
    launched, and S then runs after it; the next op of the same name is
    accepted while it may still run; outputs are copied on S into blocks of
    a caching allocator without an unordered reuse, and come from a pool;
    the ops' tensors are copied without classifying them."""
    dev = lambda kind: fake.fakecuda_device_calls(kind.encode())  # noqa: E731
    stream = fake.fakecuda_stream_create()
    total = size * (size + 1) / 2

    # Allreduces of one name, step after step, each waited on S only: the
    # host never waits for the device; S sees every result in order.
    a = cached_array(fake, stream, 256)
    handles = []
    syncs = dev("synchronize")
    for step in range(5):
        a[:] = 0
        produced = np.full(256, rank + 1 + step, np.float32)  # alive until S ran the write
        fake.fakecuda_stream_write(stream, a.ctypes.data, produced.ctypes.data, a.nbytes, 2000)
        dims = (ctypes.c_int64 * 1)(256)
        op = make_op(op_type=C.OPTYPE_ALLREDUCE, name=b"dev.ordered", input=a.ctypes.data,
                     output=a.ctypes.data, shape=dims, ndim=1, dtype=C.FLOAT32, device=rank,
                     reduce_op=C.OP_SUM, stream=stream)
        h = enqueue(op)
        code = _lib.hvd_wait_on_stream(h, stream, WAIT_S)
        assert code == C.OK, _lib.last_error()
        handles.append(h)
        assert fake.fakecuda_stream_synchronize(stream) == C.OK
        assert (a == total + size * step).all(), (step, a[:4])
    for h in handles:
        done_then_release(h)
    assert dev("synchronize") == syncs, "a device batch was waited for on the host"

    # Engine-allocated outputs: copied on S (after S waited for the op) into
    # a block S's allocator hands back while S's earlier kernel still uses
    # it: ordered, so no unordered reuse; the blocks come from a pool.
    allocs = dev("alloc")
    for step in range(6):
        e = np.full((rank + 1, 2), rank + step, dtype=np.float32)
        op, dims = op_for(C.OPTYPE_ALLGATHER, e, f"dev.pool.{step}", rank, output=False,
                          stream=stream)
        h = enqueue(op)
        assert _lib.hvd_wait_on_stream(h, stream, WAIT_S) == C.OK, _lib.last_error()
        rows = size * (size + 1) // 2
        old = cached_array(fake, stream, rows * 2)
        slow = np.full(rows * 2, -1, np.float32)
        fake.fakecuda_stream_write(stream, old.ctypes.data, slow.ctypes.data, old.nbytes, 100000)
        fake.fakecuda_cached_free(old.ctypes.data, stream)  # torch: freed, its kernel queued
        out = cached_array(fake, stream, rows * 2)  # the same block, at once
        _lib.check(_lib.hvd_handle_copy_output_on(h, out.ctypes.data, out.nbytes, stream),
                   "copy output on the stream")
        assert fake.fakecuda_stream_synchronize(stream) == C.OK
        want = np.concatenate([np.full((r + 1) * 2, r + step, np.float32) for r in range(size)])
        assert (out == want).all(), (step, out, want)
        done_then_release(h)
        fake.fakecuda_cached_free(out.ctypes.data, stream)
    assert fake.fakecuda_violations() == 0, "a block was reused without an ordering wait"
    assert dev("alloc") <= allocs + 1, ("outputs are not pooled", dev("alloc") - allocs)
    assert dev("classified") == 0, ("the ops' tensors were classified entry by entry",
                                    dev("classified"))
    fake.fakecuda_cached_free(a.ctypes.data, stream)
    fake.fakecuda_stream_destroy(stream)


def python_handles(fake, rank, size):
    """hvd's Python collectives over a framework whose arrays are fakecuda
    device memory (device = rank) from its caching allocator on stream S:
    a handle's wait returns once the op is launched, ordered on S (no host
    wait for the device); the op's buffers and engine handles stay held
    (hvd._handles._on_device) until the device is done, then go; outputs
    are copied on S with no unordered reuse."""
    from hvd import _handles
    from hvd._collectives.ops import Collectives
    from hvd._numpy_framework import NumpyFramework
    from hvd.common import Sum

    stream = fake.fakecuda_stream_create()

    class FakeCudaArrays(NumpyFramework):
        def info(self, a):
            return a.ctypes.data, a.shape, TYPES[a.dtype.type], rank

        def stream(self, a):
            return stream

        def empty(self, shape, like):
            n = int(np.prod(shape))
            return cached_array(fake, stream, max(n, 1), like.dtype)[:n].reshape(shape)

    ops = Collectives(FakeCudaArrays())
    total = size * (size + 1) / 2
    held_while_running = 0
    for step in range(10):
        a = np.full(64, rank + 1 + step, np.float32)
        h = ops.allreduce_async_(a, op=Sum, name="py.ordered")
        result = h.wait()
        held_while_running += sum(1 for ids, _ in _handles._on_device if h.ids == ids)
        assert fake.fakecuda_stream_synchronize(stream) == C.OK
        assert result is a and (a == total + size * step).all(), (step, a[:4])
    gathered = ops.allgather(np.full((rank + 1, 3), rank, np.float32), name="py.gather")
    assert fake.fakecuda_stream_synchronize(stream) == C.OK
    want = np.concatenate([np.full((r + 1, 3), r, np.float32) for r in range(size)])
    assert (gathered == want).all(), gathered
    assert held_while_running >= 1, "no op was held while it still ran on the device"
    deadline = time.monotonic() + WAIT_S
    while _handles._on_device:
        assert time.monotonic() < deadline, "device ops never released"
        time.sleep(0.01)
        _handles.release_done_device_ops()
    assert fake.fakecuda_violations() == 0
    fake.fakecuda_stream_destroy(stream)


def freed(fake):
    """After shutdown: the device context closed, every device allocation freed."""
    dev = lambda kind: fake.fakecuda_device_calls(kind.encode())  # noqa: E731
    assert dev("close") == dev("open") == 1, (dev("open"), dev("close"))
    assert dev("live_allocations") == 0, dev("live_allocations")


def refused(rank, size):
    setting = os.environ.get("HVD_GPU_TRANSPORT", "auto")
    for attempt in range(2):  # the same reason each time, no retry
        a = np.full(2, 1, dtype=np.float32)
        h, code, message = run(C.OPTYPE_ALLREDUCE, a, f"dev.{attempt}", rank, reduce_op=C.OP_SUM)
        release(h)
        assert code == C.ERR_FAILED_PRECONDITION, (code, message)
        assert message.startswith(f"HVD_GPU_TRANSPORT={setting} cannot run here: "), message
        print(f"device op refused: {message}", flush=True)
        cpu_allreduce(rank, size, f"cpu.{attempt}")


def main():
    _lib.check(_lib.hvd_init(), "init")
    rank, size = _lib.hvd_rank(), _lib.hvd_size()
    fake = None
    if sys.argv[1] == "routed":
        fake = routed(rank, size, sys.argv[2])
    elif sys.argv[1] == "hierarchical":
        fake = hierarchical(rank, size, sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "staged":
        fake = staged(rank, size, sys.argv[2])
    elif sys.argv[1] == "v1":
        v1(rank, size)
    else:
        refused(rank, size)
    _lib.check(_lib.hvd_shutdown(), "shutdown")
    if fake is not None:
        freed(fake)
    print(f"ok rank {rank}", flush=True)


if __name__ == "__main__":
    main()
