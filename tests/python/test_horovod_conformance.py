"""Conformance with horovod.torch: what a test program written for Horovod
expects, organised like Horovod's API documentation (basics, allreduce,
allgather, broadcast, alltoall, reducescatter, grouped ops, join, errors),
with the values Horovod documents and its own test suite checks.

The whole file runs in ONE job (hvdrun -np 2 and -np 3, as users run a test
file), without -x: a test that fails or aborts half-way must not leave the
ranks waiting on different tensors. The ctest entries set
HVD_STALL_CHECK_NO_PROGRESS_SECONDS=3 so that the out-of-step cases below
are found in seconds. With HVD_CONFORMANCE_IMPORT=horovod the file imports
`horovod.torch` (ctest python.horovod.np2, under hvdrun --horovod-compat), as
an unchanged Horovod test would.
"""

import itertools
import os
import time

import pytest
import torch

if os.environ.get("HVD_CONFORMANCE_IMPORT") == "horovod":
    import horovod.torch as hvd
    from horovod.common.exceptions import HorovodInternalError
else:
    import hvd.torch as hvd
    from hvd.exceptions import HorovodInternalError

INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
NUMERIC = INTS + FLOATS
GRAD_TYPES = [torch.float32, torch.float64]
DIMS = [1, 2, 3]
NO_PROGRESS_S = float(os.environ.get("HVD_STALL_CHECK_NO_PROGRESS_SECONDS", "10"))


def ids(values):
    return [str(v).replace("torch.", "") for v in values]


def random_ints(shape, dtype, lo=-3, hi=4, seed=1234):
    """The same small integers on every rank (exact in every dtype)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        lo = max(lo, 0)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def exact(a, b):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert torch.equal(a, b), f"{a} != {b}"


def scaled(tensor, factor):
    """Horovod's CPU scaling: integers in float64, float16/bfloat16 in float32,
    cast back (truncation toward zero for integers)."""
    math = torch.float64 if not tensor.is_floating_point() else (
        torch.float32 if tensor.dtype in (torch.float16, torch.bfloat16) else tensor.dtype)
    return (tensor.to(math) * factor).to(tensor.dtype)


def close(a, b, dtype):
    tol = {torch.float16: 2e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-6)
    diff = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    scale = max(1.0, b.double().abs().max().item() if b.numel() else 1.0)
    assert diff <= tol * scale, f"max difference {diff} ({dtype})"


def all_ranks_agree(flag):
    """True on every rank when `flag` is true on every rank."""
    return bool(hvd.allreduce(torch.tensor([int(bool(flag))]), op=hvd.Min).item())


# ---- Basics: init, world, build queries, the worker environment -----------------------------

def test_imported_as_configured():
    expected = "horovod.torch" if os.environ.get("HVD_CONFORMANCE_IMPORT") == "horovod" else "hvd.torch"
    assert hvd.__name__ == expected


def test_init_twice_is_harmless():
    hvd.init()
    assert hvd.is_initialized()


def test_world_matches_the_horovod_environment():
    env = os.environ
    assert hvd.rank() == int(env["HOROVOD_RANK"])
    assert hvd.size() == int(env["HOROVOD_SIZE"])
    assert hvd.local_rank() == int(env["HOROVOD_LOCAL_RANK"])
    assert hvd.local_size() == int(env["HOROVOD_LOCAL_SIZE"])
    assert hvd.cross_rank() == int(env["HOROVOD_CROSS_RANK"])
    assert hvd.cross_size() == int(env["HOROVOD_CROSS_SIZE"])
    assert env["HOROVOD_HOSTNAME"]
    assert env["HOROVOD_CONTROLLER"] == "gloo"
    assert env["HOROVOD_CPU_OPERATIONS"] == "gloo"
    assert hvd.is_homogeneous()


def test_build_queries():
    assert hvd.gloo_built() and hvd.gloo_enabled()
    assert not hvd.mpi_built() and not hvd.mpi_enabled()
    assert not hvd.ccl_built() and not hvd.ddl_built()
    with pytest.raises(ValueError):  # Horovod: defined only when MPI is enabled
        hvd.mpi_threads_supported()
    lib = os.environ.get("HVD_LIBRARY", "")
    plugin = os.path.join(os.path.dirname(lib), "libhvd_nccl.so")
    assert bool(hvd.nccl_built()) == os.path.exists(plugin)


# ---- allreduce ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC, DIMS), ids=str)
def test_allreduce_sum(dtype, dim):
    r, n = hvd.rank(), hvd.size()
    base = random_ints([17] * dim, dtype)
    summed = hvd.allreduce(base * (r + 1), op=hvd.Sum)
    exact(summed, (base.to(torch.int64) * (n * (n + 1) // 2)).to(dtype))


@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC, DIMS), ids=str)
def test_allreduce_average(dtype, dim):
    # Horovod's test: the same tensor everywhere averages to itself, exactly.
    tensor = random_ints([17] * dim, dtype)
    exact(hvd.allreduce(tensor, average=True), tensor)
    exact(hvd.allreduce(tensor), tensor)  # Average is the default op


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_allreduce_min_max_product(dtype):
    r, n = hvd.rank(), hvd.size()
    base = random_ints([5, 3], dtype, lo=0, hi=3)
    mine = (base.to(torch.int64) + r).to(dtype)
    exact(hvd.allreduce(mine, op=hvd.Min), base)
    exact(hvd.allreduce(mine, op=hvd.Max), (base.to(torch.int64) + n - 1).to(dtype))
    exact(hvd.allreduce(base, op=hvd.Product), (base.to(torch.int64) ** n).to(dtype))


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_allreduce_prescale(dtype):
    n = hvd.size()
    tensor = random_ints([17, 3], dtype, lo=-100, hi=100)
    factor = 0.37
    summed = hvd.allreduce(tensor, op=hvd.Sum, prescale_factor=factor)
    expected = (scaled(tensor, factor).to(torch.float64) * n)
    if dtype in INTS:
        exact(summed, expected.to(dtype))
    else:
        close(summed, expected, dtype)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_allreduce_postscale(dtype):
    n = hvd.size()
    tensor = random_ints([17, 3], dtype, lo=-40, hi=40)
    factor = 0.37
    summed = hvd.allreduce(tensor, op=hvd.Sum, postscale_factor=factor)
    expected = scaled((tensor.to(torch.int64) * n).to(dtype), factor)
    if dtype in INTS:
        exact(summed, expected)
    else:
        close(summed, expected, dtype)


@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_allreduce_average_with_scale_on_integers(dtype):
    # Horovod folds the average into the postscale factor (in float64).
    n = hvd.size()
    tensor = random_ints([9], dtype, lo=-20, hi=20)
    out = hvd.allreduce(tensor, op=hvd.Average, postscale_factor=3.0)
    exact(out, ((tensor.to(torch.int64) * n).to(torch.float64) * (3.0 / n)).to(dtype))


def test_allreduce_inplace_and_async():
    r, n = hvd.rank(), hvd.size()
    t = torch.full((4,), float(r))
    assert hvd.allreduce_(t, op=hvd.Sum) is t
    exact(t, torch.full((4,), float(n * (n - 1) // 2)))
    h = hvd.allreduce_async(torch.ones(3), op=hvd.Sum)
    assert isinstance(hvd.poll(h), bool)
    exact(hvd.synchronize(h), torch.full((3,), float(n)))


def test_allreduce_duplicate_name_error():
    # Horovod's test: a second op under a name in flight is a ValueError on
    # the calling rank; the first op stays valid and completes once the other
    # ranks submit it (after synch1, so it is surely in flight on rank 0).
    # On the other ranks Horovod's test repeats "duplicate_name" right after
    # submitting it, but rank 0 submitted it long before, so with no latency
    # floor it may already be done (and the repeat a new op): they check a
    # name rank 0 submits only after synch2 instead.
    rank, size = hvd.rank(), hvd.size()
    if size == 1:
        pytest.skip("needs two ranks")
    tensor = torch.ones(17, 17, 17)
    first = None
    if rank == 0:
        first = hvd.allreduce_async(tensor, name="duplicate_name")
        for _ in range(10):
            with pytest.raises(ValueError, match="duplicate_name"):
                hvd.allreduce_async(tensor, name="duplicate_name")
    hvd.allreduce(torch.FloatTensor([1]), name="synch1")
    if rank > 0:
        first = hvd.allreduce_async(tensor, name="duplicate_name")
        late = hvd.allreduce_async(tensor, name="duplicate_name_late")
        with pytest.raises(ValueError, match="duplicate_name_late"):
            hvd.allreduce_async(tensor, name="duplicate_name_late")
    hvd.allreduce(torch.FloatTensor([2]), name="synch2")
    if rank == 0:
        late = hvd.allreduce_async(tensor, name="duplicate_name_late")
    exact(hvd.synchronize(first), tensor)
    exact(hvd.synchronize(late), tensor)


def test_allreduce_mismatch_is_an_internal_error_everywhere():
    # Shapes or dtypes that differ across ranks: a failed collective
    # (HorovodInternalError, a RuntimeError) on every rank; the job goes on.
    r = hvd.rank()
    with pytest.raises(HorovodInternalError):
        hvd.allreduce(torch.ones(r + 1), name="mismatched_shape")
    with pytest.raises(RuntimeError):
        hvd.allreduce(torch.ones(2, dtype=torch.float32 if r == 0 else torch.float64),
                      name="mismatched_dtype")
    exact(hvd.allreduce(torch.ones(2), name="mismatched_shape", op=hvd.Sum),
          torch.full((2,), float(hvd.size())))


def test_grouped_allreduce():
    r, n = hvd.rank(), hvd.size()
    tensors = [torch.full((3,), float(r)), torch.full((2, 2), r, dtype=torch.int32)]
    out = hvd.grouped_allreduce(tensors, op=hvd.Sum)
    exact(out[0], torch.full((3,), float(n * (n - 1) // 2)))
    exact(out[1], torch.full((2, 2), n * (n - 1) // 2, dtype=torch.int32))
    ints = [torch.full((4,), 10, dtype=torch.int64), torch.full((1,), -7, dtype=torch.int32)]
    scaled_out = hvd.grouped_allreduce(ints, op=hvd.Sum, prescale_factor=0.5)
    exact(scaled_out[0], torch.full((4,), 5 * n, dtype=torch.int64))
    exact(scaled_out[1], torch.full((1,), -3 * n, dtype=torch.int32))


@pytest.mark.parametrize("dtype", GRAD_TYPES, ids=ids(GRAD_TYPES))
def test_allreduce_grad(dtype):
    # Horovod: Sum -> size * ones; Average -> ones.
    n = hvd.size()
    for op, expected in ((hvd.Sum, float(n)), (hvd.Average, 1.0)):
        x = torch.ones(17, 17, dtype=dtype, requires_grad=True)
        hvd.allreduce(x, op=op).backward(torch.ones(17, 17, dtype=dtype))
        exact(x.grad, torch.full((17, 17), expected, dtype=dtype))


# ---- allgather ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC + [torch.bool], DIMS), ids=str)
def test_allgather_variable_size(dtype, dim):
    r, n = hvd.rank(), hvd.size()
    sizes = [17, 32, 81, 12, 15, 23, 22][:n]
    tensor = torch.ones([sizes[r]] + [17] * (dim - 1)).mul_(r % 2 if dtype == torch.bool else r)
    gathered = hvd.allgather(tensor.to(dtype))
    assert list(gathered.shape) == [sum(sizes)] + [17] * (dim - 1)
    at = 0
    for q in range(n):
        part = gathered[at:at + sizes[q]]
        value = (q % 2) if dtype == torch.bool else q
        exact(part, torch.full(part.shape, value).to(dtype))
        at += sizes[q]


@pytest.mark.parametrize("dtype", GRAD_TYPES, ids=ids(GRAD_TYPES))
def test_allgather_grad(dtype):
    # Horovod: the incoming gradient is averaged over ranks, then this rank's
    # rows are taken: grad_ys with value q in rank q's rows -> ones * rank.
    r, n = hvd.rank(), hvd.size()
    sizes = [3, 2, 7, 4, 6, 8, 10][:n]
    for dim in DIMS:
        x = torch.ones([sizes[r]] + [17] * (dim - 1), dtype=dtype).mul_(r).requires_grad_()
        grad_ys = torch.cat([torch.ones([s] + [17] * (dim - 1), dtype=dtype) * q
                             for q, s in enumerate(sizes)])
        hvd.allgather(x).backward(grad_ys)
        exact(x.grad, torch.ones_like(x) * r)


def test_allgather_grad_averages_differing_gradients():
    # Gradients that differ between ranks: Horovod averages them.
    r, n = hvd.rank(), hvd.size()
    x = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    hvd.allgather(x).backward(torch.full((2 * n, 3), float(r), dtype=torch.float64))
    exact(x.grad, torch.full((2, 3), (n - 1) / 2, dtype=torch.float64))


def test_grouped_allgather_and_grad():
    r, n = hvd.rank(), hvd.size()
    a = torch.full((r + 1, 2), float(r), requires_grad=True)
    b = torch.full((1,), float(-r), requires_grad=True)
    ga, gb = hvd.grouped_allgather([a, b])
    exact(ga.detach(), torch.cat([torch.full((q + 1, 2), float(q)) for q in range(n)]))
    exact(gb.detach(), torch.tensor([float(-q) for q in range(n)]))
    (ga.sum() + 2 * gb.sum()).backward()
    exact(a.grad, torch.ones_like(a))
    exact(b.grad, torch.full((1,), 2.0))


# ---- broadcast ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC + [torch.bool], DIMS), ids=str)
def test_broadcast(dtype, dim):
    r, n = hvd.rank(), hvd.size()
    for root in range(n):
        value = (root % 2) if dtype == torch.bool else root
        tensor = torch.ones([17] * dim).mul_((r % 2) if dtype == torch.bool else r).to(dtype)
        expected = torch.ones([17] * dim).mul_(value).to(dtype)
        out = hvd.broadcast(tensor, root)
        exact(out, expected)
        hvd.broadcast_(tensor, root)
        exact(tensor, expected)


@pytest.mark.parametrize("dtype", GRAD_TYPES, ids=ids(GRAD_TYPES))
def test_broadcast_grad(dtype):
    # Horovod: ones on the root, zeros elsewhere (the averaged gradient).
    r, n = hvd.rank(), hvd.size()
    for root, dim in itertools.product(range(n), DIMS):
        x = torch.ones([17] * dim, dtype=dtype).mul_(r).requires_grad_()
        hvd.broadcast(x, root).backward(torch.ones([17] * dim, dtype=dtype))
        exact(x.grad, torch.ones_like(x) * (1 if r == root else 0))


def test_broadcast_root_rank_mismatch_is_an_internal_error():
    if hvd.size() == 1:
        pytest.skip("needs two ranks")
    with pytest.raises(HorovodInternalError, match="root rank"):
        hvd.broadcast(torch.ones(3), root_rank=hvd.rank() % 2, name="root_mismatch")
    exact(hvd.broadcast(torch.full((3,), float(hvd.rank())), 1, name="root_mismatch"),
          torch.ones(3))


# ---- alltoall -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC + [torch.bool], DIMS), ids=str)
def test_alltoall_with_splits(dtype, dim):
    # Horovod's test: rank r sends r + 1 rows to every rank, rows sent to rank
    # i hold the value i; every rank receives only its own value.
    r, n = hvd.rank(), hvd.size()
    vals = []
    for i in range(n):
        vals += [i] * (r + 1)
    tensor = torch.tensor(vals).view([-1] + [1] * (dim - 1)).expand([-1] + [4] * (dim - 1))
    tensor = (tensor % 2 if dtype == torch.bool else tensor).to(dtype).contiguous()
    splits = torch.tensor([r + 1] * n, dtype=torch.int32)
    collected, received = hvd.alltoall(tensor, splits)
    assert received.tolist() == [q + 1 for q in range(n)]
    value = (r % 2) if dtype == torch.bool else r
    exact(collected, torch.full([sum(q + 1 for q in range(n))] + [4] * (dim - 1), value).to(dtype))


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_alltoall_equal_split(dtype):
    r, n = hvd.rank(), hvd.size()
    tensor = torch.tensor([i for i in range(n) for _ in range(2)]).to(dtype)
    exact(hvd.alltoall(tensor), torch.full((2 * n,), r).to(dtype))


def test_alltoall_grad():
    n = hvd.size()
    x = torch.ones(2 * n, 3, dtype=torch.float64, requires_grad=True)
    hvd.alltoall(x).backward(torch.ones(2 * n, 3, dtype=torch.float64))
    exact(x.grad, torch.ones_like(x))
    y = torch.ones(n, 2, requires_grad=True)
    out, _ = hvd.alltoall(y, splits=[1] * n)
    out.backward(torch.ones_like(out))
    exact(y.grad, torch.ones_like(y))


# ---- reducescatter --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,dim", itertools.product(NUMERIC, DIMS), ids=str)
def test_reducescatter_sum_and_average(dtype, dim):
    r, n = hvd.rank(), hvd.size()
    tensor = random_ints([n * 4] + [5] * (dim - 1), dtype)
    mine = tensor[r * 4:(r + 1) * 4]
    exact(hvd.reducescatter(tensor, op=hvd.Sum), (mine.to(torch.int64) * n).to(dtype))
    exact(hvd.reducescatter(tensor, op=hvd.Average), mine)
    exact(hvd.reducescatter(tensor), mine)  # Average is the default op


def test_reducescatter_uneven_rows():
    # The first rows % size ranks get one row more.
    r, n = hvd.rank(), hvd.size()
    rows = 2 * n + 1
    out = hvd.reducescatter(torch.arange(rows, dtype=torch.float32), op=hvd.Sum)
    counts = [rows // n + (1 if q < rows % n else 0) for q in range(n)]
    start = sum(counts[:r])
    exact(out, torch.arange(start, start + counts[r], dtype=torch.float32) * n)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_reducescatter_scale_factors(dtype):
    r, n = hvd.rank(), hvd.size()
    tensor = random_ints([n * 3, 2], dtype, lo=-50, hi=50)
    out = hvd.reducescatter(tensor, op=hvd.Sum, prescale_factor=0.5, postscale_factor=1.5)
    mine = scaled(tensor, 0.5)[r * 3:(r + 1) * 3]
    expected = scaled((mine.to(torch.int64 if dtype in INTS else torch.float64) * n).to(dtype),
                      1.5)
    if dtype in INTS:
        exact(out, expected)
    else:
        close(out, expected, dtype)


@pytest.mark.parametrize("dtype", GRAD_TYPES, ids=ids(GRAD_TYPES))
def test_reducescatter_grad(dtype):
    # Horovod: Sum -> ones * size; Average -> ones.
    n = hvd.size()
    for dim, (op, expected) in itertools.product(DIMS, ((hvd.Sum, float(n)), (hvd.Average, 1.0))):
        x = torch.ones([n * 4] * dim, dtype=dtype).requires_grad_()
        out = hvd.reducescatter(x, op=op)
        out.backward(torch.ones([4] + [n * 4] * (dim - 1), dtype=dtype))
        exact(x.grad, torch.full([n * 4] * dim, expected, dtype=dtype))


def test_grouped_reducescatter_and_grad():
    r, n = hvd.rank(), hvd.size()
    xs = [torch.ones(n * 2, 3, requires_grad=True), torch.ones(n, dtype=torch.float64,
                                                                requires_grad=True)]
    for op, value, grad in ((hvd.Sum, float(n), float(n)), (hvd.Average, 1.0, 1.0)):
        for x in xs:
            x.grad = None
        outs = hvd.grouped_reducescatter(xs, op=op)
        exact(outs[0].detach(), torch.full((2, 3), value))
        exact(outs[1].detach(), torch.full((1,), value, dtype=torch.float64))
        sum(o.sum() for o in outs).backward()
        exact(xs[0].grad, torch.full((n * 2, 3), grad))
        exact(xs[1].grad, torch.full((n,), grad, dtype=torch.float64))
    ints = hvd.grouped_reducescatter([torch.full((n,), 7, dtype=torch.int32)], op=hvd.Sum,
                                     postscale_factor=0.5)
    exact(ints[0], torch.full((1,), int(7 * n * 0.5), dtype=torch.int32))


# ---- join -----------------------------------------------------------------------------------

def test_join_allreduce():
    # The joined rank contributes zeros; Average still divides by size.
    r, n = hvd.rank(), hvd.size()
    tensor = random_ints([17, 17], torch.float32, lo=-100, hi=100)
    if r == 0:
        last = hvd.join()
    else:
        averaged = hvd.allreduce(tensor, name="test_join_allreduce")
        close(averaged, tensor * (n - 1) / n, torch.float32)
        last = hvd.join()
    assert 0 <= last < n
    exact(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(n)))


@pytest.mark.parametrize("op", ["allgather", "broadcast", "alltoall", "reducescatter"])
def test_join_with_other_ops_raises(op):
    r, n = hvd.rank(), hvd.size()
    tensor = torch.ones(n * 2, 3)
    if r == 0:
        last = hvd.join()
    else:
        call = {"allgather": lambda: hvd.allgather(tensor),
                "broadcast": lambda: hvd.broadcast(tensor, 1, name="test_join_broadcast"),
                "alltoall": lambda: hvd.alltoall(tensor),
                "reducescatter": lambda: hvd.reducescatter(tensor)}[op]
        with pytest.raises(RuntimeError, match="not supported with Join"):
            call()
        last = hvd.join()
    assert last != -1 and 0 <= last < n
    # Every rank is usable afterwards, for every op.
    exact(hvd.allgather(torch.full((1,), float(r))), torch.arange(n, dtype=torch.float32))
    exact(hvd.broadcast(torch.full((2,), float(r)), 0), torch.zeros(2))


def test_join_returns_the_last_rank_everywhere():
    n = hvd.size()
    if hvd.rank() == n - 1:
        time.sleep(0.3)
    last = hvd.join()
    assert last == n - 1
    assert all_ranks_agree(True)


# ---- Argument errors: raised on the calling rank, typed as Horovod types them ---------------

def local_errors():
    n = hvd.size()
    return {
        "alltoall splits sum": (ValueError,
                                lambda: hvd.alltoall(torch.empty(n - 1 if n > 1 else 0),
                                                     torch.ones(n, dtype=torch.int32) * 2)),
        "alltoall splits length": (ValueError,
                                   lambda: hvd.alltoall(torch.ones(4), splits=[1] * (n + 1))),
        "alltoall splits type": (ValueError,
                                 lambda: hvd.alltoall(torch.empty(n),
                                                      torch.empty(n, dtype=torch.float32))),
        "alltoall uneven rows": (ValueError, lambda: hvd.alltoall(torch.empty(n + 1))),
        "adasum": (NotImplementedError, lambda: hvd.allreduce(torch.ones(2), op=hvd.Adasum)),
        "unsupported dtype": (ValueError,
                              lambda: hvd.allreduce(torch.ones(2, dtype=torch.complex64))),
        "broadcast root out of range": (ValueError,
                                        lambda: hvd.broadcast(torch.ones(2), root_rank=n)),
        "bool average": (ValueError,
                         lambda: hvd.allreduce(torch.ones(2, dtype=torch.bool), op=hvd.Average)),
        "unknown handle": (ValueError, lambda: hvd.poll(12345)),
        "empty process set": (ValueError, lambda: hvd.add_process_set([])),
        "process set rank out of range": (ValueError, lambda: hvd.add_process_set([0, n])),
    }


ERROR_CASES = ["alltoall splits sum", "alltoall splits length", "alltoall splits type",
               "alltoall uneven rows", "adasum", "unsupported dtype",
               "broadcast root out of range", "bool average", "unknown handle",
               "empty process set", "process set rank out of range"]


def test_every_error_case_is_tested():
    assert sorted(local_errors()) == sorted(ERROR_CASES)


@pytest.mark.parametrize("case", ERROR_CASES)
def test_argument_error_types(case):
    kind, call = local_errors()[case]
    with pytest.raises(kind) as raised:
        call()
    assert not isinstance(raised.value, HorovodInternalError), \
        f"{case}: {type(raised.value).__name__} is a HorovodInternalError"
    # Nothing was left behind: the next unnamed ops meet on every rank.
    n = hvd.size()
    exact(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(n)))
    exact(hvd.alltoall(torch.arange(n, dtype=torch.float32)),
          torch.full((n,), float(hvd.rank())))


def test_adasum_optimizer_is_not_implemented():
    model = torch.nn.Linear(2, 1)
    with pytest.raises(NotImplementedError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=model.named_parameters(), op=hvd.Adasum)


# ---- Names in step: unnamed ops agree after refusals and aborted tests ------------------------

def test_refused_op_on_one_rank_does_not_shift_names():
    # Rank 0's alltoall is refused at once (bad splits); the others make no
    # such call. Unnamed ops that follow still pair up correctly.
    r, n = hvd.rank(), hvd.size()
    if r == 0:
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(4), splits=[1] * (n + 1))
        with pytest.raises(ValueError):
            hvd.allreduce(torch.ones(2, dtype=torch.bool), op=hvd.Average)
    for k in range(3):
        exact(hvd.allreduce(torch.full((2,), float(r + k)), op=hvd.Sum),
              torch.full((2,), float(n * (n - 1) // 2 + n * k)))
    hvd.barrier()
    exact(hvd.alltoall(torch.arange(n, dtype=torch.float32)), torch.full((n,), float(r)))


def expect_no_progress_error(call):
    """call() must fail with the no-progress error within the check time
    (plus slack), naming the tensors and ranks."""
    start = time.monotonic()
    with pytest.raises(HorovodInternalError, match="no progress") as raised:
        call()
    elapsed = time.monotonic() - start
    assert elapsed < NO_PROGRESS_S + 10, f"took {elapsed:.1f} s"
    assert "submitted by rank" in str(raised.value)
    return str(raised.value)


def test_aborted_test_on_one_rank_is_reported_then_names_realign():
    # Rank 0 "aborts" before an unnamed allreduce the other ranks make, and
    # goes on to the next unnamed call: the ranks wait for different tensors.
    # Every rank gets an error within seconds; then unnamed ops match again.
    r, n = hvd.rank(), hvd.size()
    if n == 1:
        pytest.skip("needs two ranks")
    if r == 0:
        message = expect_no_progress_error(lambda: hvd.allgather(torch.ones(1)))
    else:
        message = expect_no_progress_error(lambda: hvd.allreduce(torch.ones(2)))
    assert "allreduce.noname" in message and "allgather.noname" in message
    for k in range(2):
        exact(hvd.allreduce(torch.full((2,), float(r)), op=hvd.Sum),
              torch.full((2,), float(n * (n - 1) // 2)))
        exact(hvd.allgather(torch.full((1,), float(r))), torch.arange(n, dtype=torch.float32))
        hvd.barrier()


def test_argument_error_on_one_rank_only_never_wedges():
    # Only rank 1 passes bad splits (ValueError at once); the others' alltoall
    # waits for it. Horovod would hang here; hvd reports it on every rank.
    r, n = hvd.rank(), hvd.size()
    if n == 1:
        pytest.skip("needs two ranks")
    splits = [1] * (n + 1) if r == 1 else [1] * n
    if r == 1:
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(n), splits=splits)
        expect_no_progress_error(lambda: hvd.barrier())
    else:
        expect_no_progress_error(lambda: hvd.alltoall(torch.ones(n), splits=splits))
    hvd.barrier()
    exact(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(n)))


def test_unnamed_barriers_and_joins_stay_in_step():
    n = hvd.size()
    for _ in range(3):
        hvd.barrier()
        assert 0 <= hvd.join() < n
    assert all_ranks_agree(True)


# ---- Training on top: DistributedOptimizer still trains after all of the above ---------------

def test_distributed_optimizer_after_errors():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    g = torch.Generator().manual_seed(hvd.rank())
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4, generator=g)).pow(2).mean().backward()
        opt.step()
    weights = hvd.allgather(model.weight.detach())
    for q in range(hvd.size()):
        exact(weights[q:q + 1], model.weight.detach())
