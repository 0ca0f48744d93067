"""Every collective × dtype × in-place/out-of-place × sync/async, on torch
tensors and numpy arrays; results checked against what every rank's input
says they must be."""

import gc
import itertools
import time

import numpy as np
import pytest
import torch

import hvd.numpy as hnp
import hvd.torch as hvd
from conftest import WAIT_S

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
NUMERIC = [d for d in DTYPES if d is not torch.bool]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]
VARIANTS = ["sync", "async", "inplace", "inplace_async"]


def rank_tensor(r, dtype, shape=(2, 3)):
    """Rank r's input: small values, so that every result is exact."""
    n = int(np.prod(shape))
    i = torch.arange(n)
    if dtype is torch.bool:
        return ((i + r) % 2 == 0).reshape(shape)
    return (i % 2 + r + 1).to(dtype).reshape(shape)


def expected_reduction(op, dtype, shape=(2, 3)):
    n = hvd.size()
    xs = torch.stack([rank_tensor(r, dtype, shape).double() for r in range(n)])
    if dtype is torch.bool:
        any_, all_ = xs.amax(0) > 0, xs.amin(0) > 0
        return {hvd.Sum: any_, hvd.Max: any_, hvd.Min: all_, hvd.Product: all_}[op]
    if op == hvd.Sum:
        e = xs.sum(0)
    elif op == hvd.Average:
        e = xs.sum(0) / n
        if not dtype.is_floating_point:
            e = torch.floor(e)
    elif op == hvd.Min:
        e = xs.amin(0)
    elif op == hvd.Max:
        e = xs.amax(0)
    else:
        e = xs.prod(0)
    return e.to(dtype)


def assert_same(actual, expected):
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if actual.dtype in (torch.float16, torch.bfloat16):
        assert torch.allclose(actual.double(), expected.double(), rtol=1e-2, atol=1e-2), \
            (actual, expected)
    else:
        assert torch.equal(actual, expected), (actual, expected)


def run(variant, sync_fn, async_fn, inplace_fn, inplace_async_fn, tensor, **kw):
    if variant == "sync":
        return sync_fn(tensor, **kw)
    if variant == "async":
        return hvd.synchronize(async_fn(tensor, **kw), timeout=WAIT_S)
    if variant == "inplace":
        out = inplace_fn(tensor, **kw)
    else:
        out = hvd.synchronize(inplace_async_fn(tensor, **kw), timeout=WAIT_S)
    assert out is tensor
    return tensor


# ---- allreduce ----------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_allreduce(op, dtype, variant):
    if dtype is torch.bool and op == hvd.Average:
        pytest.skip("average is not defined for bool (test_errors checks the error)")
    t = rank_tensor(hvd.rank(), dtype)
    before = t.clone()
    out = run(variant, hvd.allreduce, hvd.allreduce_async, hvd.allreduce_, hvd.allreduce_async_,
              t, op=op)
    assert_same(out, expected_reduction(op, dtype))
    if not variant.startswith("inplace"):
        assert torch.equal(t, before), "out-of-place allreduce changed its input"


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_allreduce_scale_factors(dtype):
    t = rank_tensor(hvd.rank(), dtype)
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25)
    assert_same(out, (expected_reduction(hvd.Sum, torch.float64) * 0.5).to(dtype))
    out = hvd.allreduce(t, op=hvd.Average, prescale_factor=3.0, postscale_factor=2.0)
    assert_same(out, (expected_reduction(hvd.Average, torch.float64) * 6.0).to(dtype))


def test_allreduce_average_keyword_and_default():
    t = rank_tensor(hvd.rank(), torch.float32)
    assert_same(hvd.allreduce(t), expected_reduction(hvd.Average, torch.float32))
    with pytest.warns(DeprecationWarning):
        out = hvd.allreduce(t, average=False)
    assert_same(out, expected_reduction(hvd.Sum, torch.float32))
    with pytest.raises(ValueError):
        hvd.allreduce(t, average=True, op=hvd.Sum)


def test_allreduce_non_contiguous_in_place():
    base = torch.zeros(4, 6)
    view = base[:, ::2]  # every other column: not contiguous
    view.copy_(rank_tensor(hvd.rank(), torch.float32, (4, 3)))
    assert not view.is_contiguous()
    hvd.allreduce_(view, op=hvd.Sum)
    assert_same(view.contiguous(), expected_reduction(hvd.Sum, torch.float32, (4, 3)))
    assert torch.count_nonzero(base[:, 1::2]) == 0, "wrote outside the view"


def test_allreduce_scalar_and_empty():
    s = torch.tensor(float(hvd.rank() + 1))
    assert hvd.allreduce(s, op=hvd.Sum).item() == sum(range(1, hvd.size() + 1))
    e = torch.zeros(0, 3)
    assert hvd.allreduce(e, op=hvd.Sum).shape == (0, 3)


def test_allreduce_fp16_compression():
    t = rank_tensor(hvd.rank(), torch.float32)
    out = hvd.allreduce(t, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    assert_same(out, expected_reduction(hvd.Sum, torch.float32))


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32], ids=str)
def test_grouped_allreduce(dtype, in_place):
    shapes = [(3,), (2, 2), (1, 5)]
    ts = [rank_tensor(hvd.rank(), dtype, s) for s in shapes]
    if in_place:
        outs = hvd.grouped_allreduce_(ts, op=hvd.Sum)
        assert all(o is t for o, t in zip(outs, ts))
    else:
        outs = hvd.synchronize(hvd.grouped_allreduce_async(ts, op=hvd.Sum), timeout=WAIT_S)
    for o, s in zip(outs, shapes):
        assert_same(o, expected_reduction(hvd.Sum, dtype, s))
    ts = [rank_tensor(hvd.rank(), dtype, s) for s in shapes]
    outs = hvd.grouped_allreduce(ts, op=hvd.Max, name="grouped.max")
    for o, s in zip(outs, shapes):
        assert_same(o, expected_reduction(hvd.Max, dtype, s))


# ---- allgather -----------------------------------------------------------------

def gather_input(r, dtype):
    return rank_tensor(r, dtype, (r + 1, 2))  # rank r has r+1 rows


@pytest.mark.parametrize("variant", ["sync", "async"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather(dtype, variant):
    t = gather_input(hvd.rank(), dtype)
    if variant == "sync":
        out = hvd.allgather(t)
    else:
        out = hvd.synchronize(hvd.allgather_async(t), timeout=WAIT_S)
    assert_same(out, torch.cat([gather_input(r, dtype) for r in range(hvd.size())]))


def test_grouped_allgather():
    ts = [gather_input(hvd.rank(), torch.float32), gather_input(hvd.rank(), torch.int64)[:, :1]]
    outs = hvd.grouped_allgather(ts)
    assert_same(outs[0], torch.cat([gather_input(r, torch.float32) for r in range(hvd.size())]))
    assert_same(outs[1], torch.cat([gather_input(r, torch.int64)[:, :1]
                                    for r in range(hvd.size())]))


def test_allgather_zero_rows_on_some_ranks():
    rows = 0 if hvd.rank() == 0 else 2
    out = hvd.allgather(torch.full((rows, 3), float(hvd.rank())))
    assert out.shape == (2 * (hvd.size() - 1), 3)


# ---- broadcast ------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast(dtype, variant):
    for root in range(hvd.size()):
        t = rank_tensor(hvd.rank(), dtype)
        out = run(variant, hvd.broadcast, hvd.broadcast_async, hvd.broadcast_,
                  hvd.broadcast_async_, t, root_rank=root)
        assert_same(out, rank_tensor(root, dtype))


# ---- alltoall -------------------------------------------------------------------

def alltoall_splits(r, n):
    return [(r + k) % 3 for k in range(n)]  # rows rank r sends to rank k


@pytest.mark.parametrize("variant", ["sync", "async"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_alltoall_splits(dtype, variant):
    r, n = hvd.rank(), hvd.size()

    def rows(src):
        s = alltoall_splits(src, n)
        return rank_tensor(src, dtype, (sum(s), 2)), s

    t, splits = rows(r)
    if variant == "sync":
        out, received = hvd.alltoall(t, splits=splits)
    else:
        out, received = hvd.synchronize(hvd.alltoall_async(t, splits=splits), timeout=WAIT_S)
    parts = []
    for src in range(n):
        src_t, src_splits = rows(src)
        start = sum(src_splits[:r])
        parts.append(src_t[start:start + src_splits[r]])
    assert received.tolist() == [alltoall_splits(src, n)[r] for src in range(n)]
    assert received.dtype == torch.int32
    assert_same(out, torch.cat(parts))


def test_alltoall_even_and_tensor_splits():
    r, n = hvd.rank(), hvd.size()
    t = torch.arange(2 * n, dtype=torch.float32) + 100 * r
    out = hvd.alltoall(t)  # no splits: the tensor alone, as Horovod
    assert isinstance(out, torch.Tensor)
    assert out.tolist() == [float(100 * src + 2 * r + j) for src in range(n) for j in range(2)]
    out, received = hvd.alltoall(t, splits=torch.full((n,), 2, dtype=torch.int32))
    assert received.tolist() == [2] * n


# ---- reducescatter ----------------------------------------------------------------

@pytest.mark.parametrize("variant", ["sync", "async"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Max], ids=repr)
def test_reducescatter(op, dtype, variant):
    r, n = hvd.rank(), hvd.size()
    shape = (2 * n + 1, 2)  # uneven: the first rank gets a row more
    t = rank_tensor(r, dtype, shape)
    if variant == "sync":
        out = hvd.reducescatter(t, op=op)
    else:
        out = hvd.synchronize(hvd.reducescatter_async(t, op=op), timeout=WAIT_S)
    full = expected_reduction(op, dtype, shape)
    counts = [shape[0] // n + (1 if k < shape[0] % n else 0) for k in range(n)]
    start = sum(counts[:r])
    assert_same(out, full[start:start + counts[r]])


def test_grouped_reducescatter():
    r, n = hvd.rank(), hvd.size()
    shapes = [(n, 3), (2 * n, 1)]
    ts = [rank_tensor(r, torch.float32, s) for s in shapes]
    outs = hvd.grouped_reducescatter(ts, op=hvd.Sum)
    for o, s in zip(outs, shapes):
        rows = s[0] // n
        assert_same(o, expected_reduction(hvd.Sum, torch.float32, s)[r * rows:(r + 1) * rows])


# ---- barrier, poll, handles -------------------------------------------------------

def test_barrier_and_poll():
    hvd.barrier()
    h = hvd.allreduce_async(torch.ones(3), op=hvd.Sum, name="polled")
    deadline = time.monotonic() + WAIT_S
    while not hvd.poll(h):
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert hvd.synchronize(h).tolist() == [float(hvd.size())] * 3
    assert hvd.poll(h)


def test_handle_keeps_tensors_alive():
    handles = [hvd.allreduce_async_(torch.full((1000,), float(i)), op=hvd.Sum) for i in range(8)]
    gc.collect()
    for i, h in enumerate(handles):
        assert torch.all(hvd.synchronize(h, timeout=WAIT_S) == i * hvd.size())


def test_many_ops_in_flight_in_any_order():
    ids = list(range(20))
    order = ids if hvd.rank() % 2 == 0 else ids[::-1]  # ranks submit in different orders
    handles = {i: hvd.allreduce_async(torch.full((4,), float(i)), op=hvd.Sum,
                                      name=f"inflight.{i}") for i in order}
    for i in ids:
        assert torch.all(hvd.synchronize(handles[i], timeout=WAIT_S) == i * hvd.size())


def test_sparse_allreduce():
    r, n = hvd.rank(), hvd.size()
    i = torch.tensor([[r, r + 1]])
    v = torch.tensor([1.0, 2.0])
    sp = torch.sparse_coo_tensor(i, v, (n + 1,))
    out = hvd.synchronize(hvd.sparse_allreduce_async(sp, name="sparse", op=hvd.Sum))
    dense = torch.zeros(n + 1)
    for src in range(n):
        dense[src] += 1.0
        dense[src + 1] += 2.0
    assert torch.equal(out.to_dense(), dense)


# ---- numpy ---------------------------------------------------------------------------

NP_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
             np.float64, np.bool_]


def np_rank_array(r, dtype, shape=(2, 3)):
    i = np.arange(int(np.prod(shape)))
    if dtype is np.bool_:
        return ((i + r) % 2 == 0).reshape(shape)
    return (i % 2 + r + 1).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: d.__name__)
def test_numpy_collectives(dtype):
    r, n = hvd.rank(), hvd.size()
    a = np_rank_array(r, dtype)
    allx = [np_rank_array(s, dtype) for s in range(n)]
    op = hnp.Max
    out = hnp.allreduce(a, op=op)
    np.testing.assert_array_equal(out, np.max(allx, axis=0).astype(dtype))
    b = a.copy()
    hnp.allreduce_(b, op=hnp.Min)
    np.testing.assert_array_equal(b, np.min(allx, axis=0).astype(dtype))
    np.testing.assert_array_equal(hnp.allgather(a), np.concatenate(allx))
    np.testing.assert_array_equal(hnp.broadcast(a, root_rank=n - 1), allx[-1])
    c = a.copy()
    hnp.broadcast_(c, root_rank=0)
    np.testing.assert_array_equal(c, allx[0])
    rows = np.repeat(a[:1], n, axis=0)
    out, received = hnp.alltoall(rows, splits=[1] * n)
    np.testing.assert_array_equal(out, np.concatenate([x[:1] for x in allx]))
    assert received.tolist() == [1] * n
    # The torch calls take numpy arrays too.
    np.testing.assert_array_equal(hvd.allgather(a), np.concatenate(allx))


def test_numpy_average_reducescatter_and_async():
    r, n = hvd.rank(), hvd.size()
    a = np.full((n, 2), float(r + 1), dtype=np.float32)
    out = hnp.reducescatter(a, op=hnp.Sum)
    np.testing.assert_allclose(out, np.full((1, 2), n * (n + 1) / 2))
    h = hnp.allreduce_async(np.arange(3.0) + r)
    np.testing.assert_allclose(hnp.synchronize(h), np.arange(3.0) + (n - 1) / 2)
    strided = np.zeros((4, 4))[:, ::2]
    strided[...] = r
    hnp.allreduce_(strided, op=hnp.Sum)
    np.testing.assert_allclose(strided, np.full((4, 2), n * (n - 1) / 2))


def test_numpy_rejects_unsupported_dtype():
    with pytest.raises(TypeError, match="complex"):
        hnp.allreduce(np.ones(2, np.complex64))


def test_all_combinations_counted():
    # Guards the parametrization above from silently shrinking.
    assert len(list(itertools.product(OPS, DTYPES, VARIANTS))) == 200


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_large_outputs_are_handed_over_and_outlive_their_handles(dtype):
    """Outputs of at least outputs.TAKE_OUTPUT_MIN_BYTES come from libhvd's
    memory without a copy (hvd_handle_take_output): right values for
    allgather, alltoall and reducescatter, in torch and numpy; a view keeps
    the memory after the output itself is gone, while later ops of the same
    size (which reuse freed memory) run; writable like any tensor."""
    from hvd._collectives import outputs
    n, r = hvd.size(), hvd.rank()
    rows = outputs.TAKE_OUTPUT_MIN_BYTES // (64 * torch.tensor([], dtype=dtype).element_size()) + 7
    base = torch.arange(rows * 64).reshape(rows, 64) % 5
    x = (base + r).to(dtype)
    gathered = hvd.allgather(x, name=f"big_ag_{dtype}")
    assert gathered.shape == (rows * n, 64)
    for k in range(n):
        assert torch.equal(gathered[k * rows:(k + 1) * rows], (base + k).to(dtype))
    view = gathered[rows:]
    expect = view.clone()
    del gathered
    gc.collect()
    for i in range(4):  # would land in the view's memory had it been freed
        other = hvd.allgather(torch.full_like(x, 3 - i % 2), name=f"big_ag_{dtype}_{i}")
        assert other.shape == (rows * n, 64)
        del other
        gc.collect()
    assert torch.equal(view, expect)
    view.fill_(True if dtype is torch.bool else 1)  # writable memory of its own
    splits = [rows // n] * (n - 1) + [rows - rows // n * (n - 1)]
    out, received = hvd.alltoall(x, splits=splits, name=f"big_a2a_{dtype}")
    assert received.tolist() == [splits[r]] * n
    mine = slice(sum(splits[:r]), sum(splits[:r + 1]))
    assert torch.equal(out, torch.cat([(base[mine] + k).to(dtype) for k in range(n)]))
    if dtype is not torch.bool:
        summed = hvd.reducescatter(x, op=hvd.Sum, name=f"big_rs_{dtype}")
        total = sum((base + k).to(dtype) for k in range(n))
        assert torch.equal(summed, total.tensor_split(n)[r])  # the first ranks get a row more
    big = np.arange(rows * 64, dtype=np.float32).reshape(rows, 64) + r
    got = hnp.allgather(big, name=f"big_np_{dtype}")
    assert got.shape == (rows * n, 64) and got.flags.writeable
    assert np.array_equal(got[rows * (n - 1):], big - r + n - 1)
