"""Errors (mismatches across ranks raise HorovodInternalError with the
engine's message on every rank; argument errors at once), process sets,
basics and build queries, timeline, and shutdown / init again."""

import json
import os
import tempfile

import numpy as np
import pytest
import torch

import hvd
import hvd.torch as ht
from hvd import _lib
from conftest import WAIT_S


# ---- basics -------------------------------------------------------------------------

def test_world():
    assert ht.is_initialized()
    assert 0 <= ht.rank() < ht.size()
    assert ht.size() == int(os.environ.get("HVD_SIZE", "1"))
    assert 0 <= ht.local_rank() < ht.local_size()
    assert 0 <= ht.cross_rank() < ht.cross_size()
    assert ht.is_homogeneous()


def test_constants_come_from_the_library():
    for op, name in [(ht.Sum, "HVD_OP_SUM"), (ht.Average, "HVD_OP_AVERAGE"),
                     (ht.Min, "HVD_OP_MIN"), (ht.Max, "HVD_OP_MAX"),
                     (ht.Product, "HVD_OP_PRODUCT")]:
        assert int(op) == _lib.constant(name)
    with pytest.raises(ImportError):
        _lib.constant("HVD_NO_SUCH_CONSTANT")


def test_hvd_op_struct_matches_the_header():
    """hvd_op in _lib.py has the header's fields, in order, with its types."""
    import ctypes
    import re
    header = os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "include", "hvd",
                          "c_api.h")
    text = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    body = text[text.index("typedef struct hvd_op {") + len("typedef struct hvd_op {"):
                text.index("} hvd_op;")]
    decls = [d.strip() for d in body.split(";") if d.strip()]
    c_types = {"uint32_t": ctypes.c_uint32, "int32_t": ctypes.c_int32, "const char*": ctypes.c_char_p,
               "const void*": ctypes.c_void_p, "void*": ctypes.c_void_p,
               "const int64_t*": ctypes.POINTER(ctypes.c_int64), "double": ctypes.c_double}
    fields = []
    for d in decls:
        m = re.match(r"(.*?[\s*])(\w+)$", d)
        fields.append((m.group(2), c_types[m.group(1).replace(" *", "*").strip()]))
    assert fields == list(_lib.hvd_op._fields_)


def test_make_op_builds_by_field_name_with_struct_size():
    import ctypes
    op = _lib.make_op(op_type=_lib.C.OPTYPE_BROADCAST, root_rank=3, ndim=1)
    assert op.struct_size == ctypes.sizeof(_lib.hvd_op) == _lib.constant("hvd_op.size")
    assert (op.op_type, op.root_rank, op.ndim) == (_lib.C.OPTYPE_BROADCAST, 3, 1)
    assert op.device == _lib.C.DEVICE_CPU and op.process_set_id == _lib.C.GLOBAL_PROCESS_SET
    assert op.stream is None and op.prescale_factor == 0.0
    with pytest.raises(TypeError, match="hvd_op has no field root, sream"):
        _lib.make_op(root=1, sream=2)


def test_the_library_layout_is_checked_field_by_field():
    """The import-time check compares every field's offset, the sizes and the
    ABI version with what libhvd reports (hvd_constant)."""
    real = _lib._lookup
    assert _lib.layout_mismatch(_lib.hvd_op, real, _lib.hvd_abi_version()) is None
    assert _lib.hvd_abi_version() == _lib.ABI_VERSION == _lib.constant("HVD_ABI_VERSION")

    def shifted(field, by):
        return lambda name: real(name) + by if name == f"hvd_op.offset.{field}" else real(name)
    assert _lib.layout_mismatch(_lib.hvd_op, shifted("stream", 8), _lib.ABI_VERSION) == (
        f"hvd_op.stream is at offset {_lib.hvd_op.stream.offset + 8} in libhvd but "
        f"{_lib.hvd_op.stream.offset} in the package")
    missing = lambda name: None if name == "hvd_op.offset.stream" else real(name)  # noqa: E731
    assert "libhvd's hvd_op has no field stream" in _lib.layout_mismatch(
        _lib.hvd_op, missing, _lib.ABI_VERSION)
    smaller = lambda name: 96 if name == "hvd_op.size" else real(name)  # noqa: E731
    assert _lib.layout_mismatch(_lib.hvd_op, smaller, _lib.ABI_VERSION) == (
        f"libhvd's hvd_op is 96 bytes, smaller than the package's {ctypes_size()}")
    assert _lib.layout_mismatch(_lib.hvd_op, real, 0) == (
        f"libhvd has C ABI version 0, older than the version {_lib.ABI_VERSION} this hvd "
        "package needs")


def ctypes_size():
    import ctypes
    return ctypes.sizeof(_lib.hvd_op)


def test_cpu_tensors_have_no_stream():
    from hvd.torch import _framework
    assert _framework._cuda_stream(torch.ones(2)) is None


# ---- argument errors (raised at once, on the calling rank) ---------------------------------

def test_adasum_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="Adasum"):
        ht.allreduce(torch.ones(2), op=ht.Adasum)


def test_unsupported_dtypes_and_devices():
    with pytest.raises(ValueError, match="complex64"):
        ht.allreduce(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="device"):
        ht.allreduce(torch.ones(2, device="meta"))
    with pytest.raises(TypeError):
        ht.allreduce([1.0, 2.0])


def test_a_group_mixing_devices_is_refused_before_anything_runs():
    # As Horovod: RuntimeError, nothing enqueued. (A CPU torch cannot make a
    # CUDA tensor: the ops are built as hvd.torch would build them.)
    from hvd._collectives import enqueue
    a, b = np.ones(2, np.float32), np.ones(3, np.float32)
    preps = [enqueue.Prep(_lib.make_op(op_type=_lib.C.OPTYPE_ALLREDUCE, input=a.ctypes.data,
                                       dtype=_lib.C.FLOAT32, device=device), (a, b), None)
             for device in (_lib.C.DEVICE_CPU, 0)]
    with pytest.raises(RuntimeError, match="grouped_allreduce: the tensors of one group must "
                                           "all be on one device; these are on CPU, CUDA "
                                           "device 0"):
        enqueue.submit_group(preps, "grouped_allreduce")
    after = ht.grouped_allreduce([torch.ones(2), torch.ones(3)], op=ht.Sum, name="after.mixed")
    assert after[1].sum() == 3 * ht.size()


def test_engine_argument_errors():
    with pytest.raises(ValueError, match="average is not defined for bool"):
        ht.allreduce(torch.ones(2, dtype=torch.bool), op=ht.Average)
    with pytest.raises(ValueError, match="scalar"):
        ht.allgather(torch.tensor(1.0))
    with pytest.raises(ValueError, match="splits"):
        ht.alltoall(torch.ones(4), splits=[1] * (ht.size() + 1))
    with pytest.raises(ValueError, match="out of range"):
        ht.broadcast(torch.ones(2), root_rank=ht.size())


def test_name_already_in_flight():
    # "twice" stays pending on rank 0 until the other ranks submit it after the
    # barrier, so the duplicate always meets the first one still in flight.
    if ht.rank() == 0:
        h = ht.allreduce_async(torch.ones(2), name="twice")
        with pytest.raises(ValueError, match="twice"):
            ht.allreduce_async(torch.ones(2), name="twice")
        ht.barrier()
    else:
        ht.barrier()
        h = ht.allreduce_async(torch.ones(2), name="twice")
    ht.synchronize(h, timeout=WAIT_S)


def test_error_is_a_runtime_error_with_code():
    # A failed collective (here: shapes that differ) is a HorovodInternalError
    # carrying the library's code; argument errors are not (above).
    assert issubclass(ht.HorovodInternalError, RuntimeError)
    with pytest.raises(ht.HorovodInternalError) as e:
        ht.allreduce(torch.ones(ht.rank() + 1), name="code_check")
    assert e.value.code == _lib.C.ERR_INVALID_ARGUMENT


# ---- bad arguments of the Python API: Horovod's exception types, before anything runs -------

def test_tensor_names_with_nul_are_refused():
    # A C string ends at the NUL: "a\0b" and "a\0c" would be one tensor.
    import hvd.numpy as hnp
    calls = [lambda: ht.allreduce(torch.ones(1), name="a\0b"),
             lambda: ht.allreduce_async_(torch.ones(1), name="a\0c"),
             lambda: ht.grouped_allgather([torch.ones(1, 1)], name="g\0"),
             lambda: ht.broadcast_object(1, root_rank=0, name="o\0"),
             lambda: hnp.broadcast(np.ones(1), 0, name="\0")]
    for call in calls:
        with pytest.raises(ValueError, match="contains a NUL character"):
            call()
    model = torch.nn.Linear(1, 1)
    with pytest.raises(ValueError, match="contains a NUL"):
        ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                named_parameters=[("w\0", model.weight), ("b", model.bias)])
    assert ht.allreduce(torch.ones(1), op=ht.Sum, name="a").item() == ht.size()


def test_tensor_names_of_other_types_are_type_errors():
    for name in (5, b"bytes", 1.5, ["x"]):
        with pytest.raises(TypeError, match="name must be a str, not"):
            ht.allreduce(torch.ones(1), name=name)
        with pytest.raises(TypeError, match="name must be a str, not"):
            ht.grouped_allreduce([torch.ones(1)], name=name)
    assert ht.allreduce(torch.ones(1), op=ht.Sum).item() == ht.size()


def test_poll_and_synchronize_of_what_is_not_a_handle():
    # As Horovod, whose handles are ints: an int is an unknown handle
    # (ValueError); other types are TypeErrors.
    with pytest.raises(ValueError, match="Handle 1 was not created or has been cleared"):
        ht.poll(1)
    with pytest.raises(ValueError, match="Handle 7 was not created or has been cleared"):
        ht.synchronize(7)
    for bogus in (None, "h", 1.5):
        with pytest.raises(TypeError, match="expects a handle returned by an"):
            ht.poll(bogus)
        with pytest.raises(TypeError, match="expects a handle returned by an"):
            ht.synchronize(bogus)


def test_root_rank_must_be_an_integer():
    for root in ("0", 0.0, None):
        with pytest.raises(TypeError, match="root_rank must be an integer"):
            ht.broadcast(torch.ones(1), root_rank=root)
    assert ht.broadcast(torch.ones(1), root_rank=np.int64(0)).item() == 1.0


def test_process_set_argument_errors(world):
    r, n = world
    for ranks, match in (([0, n], f"rank {n} is out of range: the job has ranks 0 to {n - 1}"),
                         ([0, n + 5], f"rank {n + 5} is out of range"),
                         ([-1, 0], "rank -1 is negative"),
                         ([], "Cannot initialize an empty process set"),
                         ([0, 0], "contain duplicates")):
        with pytest.raises(ValueError, match=match):
            ht.add_process_set(ranks)
    for ranks in ([0.5], ["0"], [None]):
        with pytest.raises(TypeError, match="ranks must be integers"):
            ht.ProcessSet(ranks)
    with pytest.raises(TypeError, match="sequence of global ranks"):
        ht.ProcessSet(3)
    with pytest.raises(TypeError, match="remove_process_set.. takes a ProcessSet"):
        ht.remove_process_set([0])
    with pytest.raises(TypeError, match="process_set must be a ProcessSet"):
        ht.allreduce(torch.ones(1), process_set=[0])
    # Any collection of integers, as Horovod's sorted(): sets, arrays.
    assert ht.ProcessSet({1, 0}).ranks == ht.ProcessSet(np.array([1, 0])).ranks == [0, 1]
    unregistered = ht.ProcessSet([0])
    model = torch.nn.Linear(1, 1)
    with pytest.raises(ValueError, match="not registered"):
        ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                process_set=unregistered)
    # Nothing was registered by the refusals: the set of every rank is new.
    every = ht.add_process_set(list(range(n)))
    assert ht.allreduce(torch.ones(1), op=ht.Sum, process_set=every).item() == n
    assert ht.remove_process_set(every)


# ---- mismatches: every rank gets the error ---------------------------------------------------

def expect_everywhere(fn, match):
    """fn() must raise HorovodInternalError matching `match` on this rank; then
    every rank reports whether it did (so one rank's success fails all)."""
    raised = False
    try:
        fn()
    except ht.HorovodInternalError as e:
        raised = bool(__import__("re").search(match, str(e)))
        msg = str(e)
    else:
        msg = "no error"
    flags = ht.allgather(torch.tensor([int(raised)]))
    assert flags.tolist() == [1] * ht.size(), msg


@pytest.fixture
def two_or_more():
    if ht.size() < 2:
        pytest.skip("needs 2 ranks")


def test_mismatched_shape(two_or_more):
    r = ht.rank()
    expect_everywhere(lambda: ht.allreduce(torch.ones(r + 1), name="mm.shape"),
                      r"mismatched shape for tensor 'mm.shape'")


def test_mismatched_dtype(two_or_more):
    dt = torch.float32 if ht.rank() == 0 else torch.float64
    expect_everywhere(lambda: ht.allreduce(torch.ones(2, dtype=dt), name="mm.dtype"),
                      r"mismatched dtype")


def test_mismatched_op(two_or_more):
    op = ht.Sum if ht.rank() == 0 else ht.Max
    expect_everywhere(lambda: ht.allreduce(torch.ones(2), op=op, name="mm.op"),
                      r"mismatched reduce op")


def test_mismatched_root(two_or_more):
    expect_everywhere(lambda: ht.broadcast(torch.ones(2), root_rank=ht.rank(), name="mm.root"),
                      r"mismatched root rank")


def test_mismatched_op_type(two_or_more):
    def fn():
        if ht.rank() == 0:
            ht.allreduce(torch.ones(2, 2), name="mm.type")
        else:
            ht.allgather(torch.ones(2, 2), name="mm.type")
    expect_everywhere(fn, r"mismatched")


def test_mismatched_allgather_trailing_shape(two_or_more):
    expect_everywhere(lambda: ht.allgather(torch.ones(2, ht.rank() + 1), name="mm.gather"),
                      r"mismatched shape")


def test_mismatch_in_async_and_numpy(two_or_more):
    r = ht.rank()
    expect_everywhere(
        lambda: ht.synchronize(ht.allreduce_async_(torch.ones(r + 2), name="mm.async"),
                               timeout=WAIT_S), r"mismatched shape")
    import hvd.numpy as hnp
    expect_everywhere(lambda: hnp.allreduce(np.ones(r + 2), name="mm.numpy"), r"mismatched")


def test_ops_still_work_after_errors():
    assert ht.allreduce(torch.ones(3), op=ht.Sum).tolist() == [float(ht.size())] * 3


# ---- process sets ------------------------------------------------------------------------------

def test_global_process_set():
    ps = ht.global_process_set
    assert ps.process_set_id == 0
    assert ps.size() == ht.size() and ps.rank() == ht.rank() and ps.included()


def test_process_sets(two_or_more):
    r, n = ht.rank(), ht.size()
    first = ht.add_process_set([0, 1])
    last = ht.add_process_set(ht.ProcessSet([n - 1]))
    evens = ht.add_process_set(list(range(0, n, 2))[::-1])  # kept sorted
    try:
        assert first.process_set_id > 0 and first.ranks == [0, 1]
        assert last.ranks == [n - 1] and evens.ranks == list(range(0, n, 2))
        assert first.size() == 2 and first.included() == (r in (0, 1))
        for ps in (first, last, evens):
            if ps.included():
                assert ps.rank() == ps.ranks.index(r)
                members = ps.ranks
                out = ht.allreduce(torch.tensor([float(r)]), op=ht.Sum, process_set=ps)
                assert out.item() == float(sum(members))
                gathered = ht.allgather(torch.tensor([[r]]), process_set=ps)
                assert gathered.reshape(-1).tolist() == members
                root = members[-1]  # a global rank
                assert ht.broadcast(torch.tensor([r]), root_rank=root,
                                    process_set=ps).item() == root
                assert ht.broadcast_object(r, root_rank=root, process_set=ps) == root
                assert ht.allgather_object(r, process_set=ps) == members
                rs = ht.reducescatter(torch.ones(len(members), 1), op=ht.Sum, process_set=ps)
                assert rs.tolist() == [[float(len(members))]]
                ht.barrier(process_set=ps)
            else:
                assert not ps.included()
                with pytest.raises(ValueError):
                    ps.rank()
                with pytest.raises(ValueError, match="not a member"):
                    ht.allreduce(torch.ones(1), process_set=ps)
        # A set's ops and the global set's ops do not wait for each other.
        if first.included():
            h = ht.allreduce_async(torch.ones(2), op=ht.Sum, name="both", process_set=first)
            g = ht.allreduce(torch.ones(2), op=ht.Sum, name="both")
            assert ht.synchronize(h, timeout=WAIT_S).tolist() == [2.0, 2.0]
        else:
            g = ht.allreduce(torch.ones(2), op=ht.Sum, name="both")
        assert g.tolist() == [float(n)] * 2
        with pytest.raises(ValueError, match="exists already"):
            ht.add_process_set([1, 0])
    finally:
        for ps in (evens, last, first):
            assert ht.remove_process_set(ps)
    assert first.process_set_id is None
    assert not ht.remove_process_set(first)
    assert not ht.remove_process_set(ht.global_process_set)
    with pytest.raises(ValueError, match="not registered"):
        ht.allreduce(torch.ones(1), process_set=first)


def test_distributed_optimizer_on_a_process_set(two_or_more):
    ps = ht.add_process_set([0, 1])
    try:
        model = torch.nn.Linear(2, 1, bias=False)
        torch.nn.init.constant_(model.weight, 1.0)
        opt = ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                      named_parameters=model.named_parameters(), process_set=ps)
        x = torch.full((1, 2), float(ht.rank() + 1))
        model(x).sum().backward()
        opt.step()
        if ps.included():  # the gradient is the average over ranks 0 and 1: 1.5
            assert model.weight.tolist() == [[-0.5, -0.5]]
        else:  # not a member: its own gradient
            assert model.weight.tolist() == [[1.0 - (ht.rank() + 1)] * 2]
    finally:
        ht.remove_process_set(ps)


# ---- timeline ------------------------------------------------------------------------------------

def test_timeline():
    path = os.path.join(tempfile.gettempdir(), f"hvd_py_timeline_{os.getpid()}.json")
    path = ht.broadcast_object(path, root_rank=0)
    ht.start_timeline(path)
    ht.allreduce(torch.ones(4), name="timeline.tensor")
    ht.stop_timeline()
    if ht.rank() == 0:
        text = open(path).read()
        assert "timeline.tensor" in text
        json.loads(text.rstrip().rstrip(",") + ("" if text.rstrip().endswith("]") else "]"))
        os.remove(path)


# ---- lifecycle: shutdown, init again with process sets (last: it restarts hvd) -------------------

NOT_INITIALIZED = r"Horovod has not been initialized; use hvd\.init\(\)\."


def test_calls_before_init_raise_what_horovod_raises():
    # Queries and process sets: ValueError; collectives: HorovodInternalError
    # (Horovod's enqueue wraps its precondition error so).
    ht.shutdown()
    try:
        model = torch.nn.Linear(1, 1)
        for call in (ht.size, ht.local_rank, lambda: ht.global_process_set.included(),
                     lambda: ht.global_process_set.size(), lambda: ht.add_process_set([0]),
                     lambda: ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                                     named_parameters=model.named_parameters())):
            with pytest.raises(ValueError, match=NOT_INITIALIZED):
                call()
        for call in (lambda: ht.allreduce(torch.ones(1)), ht.barrier, ht.join):
            with pytest.raises(ht.HorovodInternalError, match=NOT_INITIALIZED):
                call()
    finally:
        ht.init()
    assert ht.allreduce(torch.ones(1), op=ht.Sum).item() == float(ht.size())

def test_shutdown_and_init_with_process_sets(two_or_more):
    ht.shutdown()
    assert not ht.is_initialized()
    with pytest.raises(ValueError, match="not been initialized"):
        ht.rank()
    pair = ht.ProcessSet([0, 1])
    hvd.init(process_sets=[pair])
    assert ht.is_initialized() and pair.process_set_id is not None
    if pair.included():
        assert ht.allreduce(torch.ones(1), op=ht.Sum, process_set=pair).item() == 2.0
    assert ht.allreduce(torch.ones(1), op=ht.Sum).item() == float(ht.size())


# ---- waiting in slices -----------------------------------------------------------------------

def test_wait_slice_ending_just_before_the_op_is_not_an_error(monkeypatch):
    # hvd_wait's 1 s slice times out, then the op completes before the poll:
    # the wait must return the op's own status, not the slice's timeout.
    from hvd import _handles
    calls = []

    def fake_wait(handle, seconds):
        calls.append(seconds)
        return _lib.C.ERR_TIMEOUT if len(calls) == 1 else _lib.C.OK

    monkeypatch.setattr(_handles._lib, "hvd_wait", fake_wait)
    monkeypatch.setattr(_handles._lib, "hvd_poll", lambda handle: 1)
    assert _handles._wait_one(12345, None) is None
    assert len(calls) == 2


def test_op_that_itself_timed_out_reports_its_status(monkeypatch):
    # A stalled tensor fails with a timeout status of its own: reported, once.
    from hvd import _handles
    monkeypatch.setattr(_handles._lib, "hvd_wait", lambda handle, seconds: _lib.C.ERR_TIMEOUT)
    monkeypatch.setattr(_handles._lib, "hvd_poll", lambda handle: 1)
    error = _handles._wait_one(12345, None)
    assert isinstance(error, ht.HorovodInternalError) and error.code == _lib.C.ERR_TIMEOUT
