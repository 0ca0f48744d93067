"""hvd.torch on CUDA tensors (ctest label gpu; run by torch_cuda_gpu_test.py
under hvdrun, with HVD_GPU_TRANSPORT=nccl at -np 1 and =gloo, staged
through pinned host memory, at -np 2 on one GPU). Every op x dtype on CUDA
tensors gives what the same op gives on CPU tensors (the CPU transport, the
reference), outputs on the input's device; ops ordered on a side stream;
a CUDA model trained with DistributedOptimizer equals the same model
trained on the CPU; SyncBatchNorm on CUDA inputs equals it on CPU inputs.
Skips, saying why, without a CUDA device."""
import pytest
import torch

import hvd.torch as hvd

if not torch.cuda.is_available():
    pytest.skip("torch.cuda.is_available() is false: no CUDA device here",
                allow_module_level=True)

# NCCL has no int16; bool only under min and max.
DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = {torch.float16, torch.bfloat16, torch.float32, torch.float64}


@pytest.fixture(scope="module", autouse=True)
def world():
    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    yield
    hvd.shutdown()


def device():
    return torch.device("cuda", torch.cuda.current_device())


def data(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed * 7919 + hvd.rank())
    values = torch.randint(0, 5, shape, generator=g)
    return values.to(dtype)


def same(on_gpu, on_cpu):
    assert on_gpu.device == device(), on_gpu.device
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce(dtype):
    ops = [hvd.Sum, hvd.Min, hvd.Max] + ([hvd.Average] if dtype in FLOATS else [])
    for i, op in enumerate(ops):
        x = data(dtype, (3, 5), i)
        same(hvd.allreduce(x.cuda(), op=op, name=f"g.ar.{dtype}.{i}"),
             hvd.allreduce(x, op=op, name=f"c.ar.{dtype}.{i}"))
    if dtype in FLOATS:
        x = data(dtype, (17,), 9)
        same(hvd.allreduce(x.cuda(), op=hvd.Average, prescale_factor=2.0, postscale_factor=0.5,
                           name=f"g.ar.scaled.{dtype}"),
             hvd.allreduce(x, op=hvd.Average, prescale_factor=2.0, postscale_factor=0.5,
                           name=f"c.ar.scaled.{dtype}"))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_in_place_and_grouped(dtype):
    x = data(dtype, (4, 4), 1)
    g = x.cuda()
    hvd.allreduce_(g, op=hvd.Sum, name=f"g.inplace.{dtype}")
    same(g, hvd.allreduce(x, op=hvd.Sum, name=f"c.inplace.{dtype}"))
    xs = [data(dtype, (n,), n) for n in (1, 7, 33)]
    gs = hvd.grouped_allreduce([t.cuda() for t in xs], op=hvd.Sum, name=f"g.group.{dtype}")
    cs = hvd.grouped_allreduce(xs, op=hvd.Sum, name=f"c.group.{dtype}")
    for a, b in zip(gs, cs):
        same(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast_allgather_alltoall_reducescatter(dtype):
    x = data(dtype, (3, 2), 2)
    same(hvd.broadcast(x.cuda(), root_rank=hvd.size() - 1, name=f"g.bc.{dtype}"),
         hvd.broadcast(x, root_rank=hvd.size() - 1, name=f"c.bc.{dtype}"))
    rows = data(dtype, (hvd.rank() + 1, 3), 3)  # uneven first dimensions
    same(hvd.allgather(rows.cuda(), name=f"g.ag.{dtype}"),
         hvd.allgather(rows, name=f"c.ag.{dtype}"))
    splits = [(hvd.rank() + k) % 2 + 1 for k in range(hvd.size())]
    a = data(dtype, (sum(splits), 2), 4)
    g_out, g_splits = hvd.alltoall(a.cuda(), splits=splits, name=f"g.a2a.{dtype}")
    c_out, c_splits = hvd.alltoall(a, splits=splits, name=f"c.a2a.{dtype}")
    same(g_out, c_out)
    assert g_splits.tolist() == c_splits.tolist()
    r = data(dtype, (2 * hvd.size() + 1, 3), 5)
    same(hvd.reducescatter(r.cuda(), op=hvd.Sum, name=f"g.rs.{dtype}"),
         hvd.reducescatter(r, op=hvd.Sum, name=f"c.rs.{dtype}"))


def horovod_cuda_half_scale(x, factor):
    """float16 scaled as Horovod's CUDA kernels do: the factor rounded to
    half first, the product of two halves (exact in float) rounded once."""
    h = torch.tensor(factor, dtype=torch.float32).half().float()
    return (x.float() * h).half()


def test_float16_scaling_is_horovods_on_cuda():
    # Values and factors where rounding the factor to half first changes the
    # result (1/3 and 0.1 are not halves).
    x = (torch.arange(1, 257, dtype=torch.float32) * 0.37).half()
    for pre, post in ((1 / 3, 1.0), (1.0, 0.1), (0.7, 3.3)):
        summed = hvd.allreduce(x.cuda(), op=hvd.Sum, name=f"g.h.sum.{pre}.{post}")
        got = hvd.allreduce(x.cuda(), op=hvd.Sum, prescale_factor=pre, postscale_factor=post,
                            name=f"g.h.scaled.{pre}.{post}").cpu()
        scaled_in = horovod_cuda_half_scale(x, pre)
        reduced = hvd.allreduce(scaled_in.cuda(), op=hvd.Sum, name=f"g.h.ref.{pre}.{post}").cpu()
        assert torch.equal(got, horovod_cuda_half_scale(reduced, post)), (pre, post)
        assert summed.dtype == torch.float16
    # On the CPU, as Horovod's CPU path: float math with a float factor.
    cpu = hvd.allreduce(x, op=hvd.Sum, prescale_factor=1 / 3, name="c.h.scaled")
    want = (hvd.allreduce((x.float() * torch.tensor(1 / 3)).half(), op=hvd.Sum, name="c.h.ref"))
    assert torch.equal(cpu, want)


def test_alltoall_received_splits_on_the_tensors_device():
    splits = torch.tensor([1] * hvd.size(), dtype=torch.int32, device=device())
    a = torch.ones(hvd.size(), 2, device=device())
    out, received = hvd.alltoall(a, splits=splits, name="g.a2a.splits.device")
    assert out.device == device() and received.device == device(), received.device
    assert received.tolist() == [1] * hvd.size()


def test_a_group_mixing_cpu_and_cuda_tensors_raises():
    with pytest.raises(RuntimeError, match="one device"):
        hvd.grouped_allreduce([torch.ones(2), torch.ones(2, device=device())], name="g.mixed")
    ok = hvd.grouped_allreduce([torch.ones(2, device=device())] * 2, name="g.after.mixed")
    assert ok[0].device == device()


def test_nccl_built_is_the_nccl_version_code():
    assert hvd.nccl_built() >= 2700, hvd.nccl_built()  # 2.28.9 -> 22809


def test_ops_ordered_on_a_side_stream():
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.arange(1 << 16, dtype=torch.float32, device=device()) * (hvd.rank() + 1)
        y = hvd.allreduce(x, op=hvd.Sum, name="g.side")  # produced and reduced on `side`
    side.synchronize()
    total = hvd.size() * (hvd.size() + 1) / 2
    torch.testing.assert_close(y.cpu(), torch.arange(1 << 16, dtype=torch.float32) * total)


def test_bool_min_max():
    b = torch.tensor([True, hvd.rank() == 0, False])
    same(hvd.allreduce(b.cuda(), op=hvd.Min, name="g.bool.min"),
         hvd.allreduce(b, op=hvd.Min, name="c.bool.min"))
    same(hvd.allreduce(b.cuda(), op=hvd.Max, name="g.bool.max"),
         hvd.allreduce(b, op=hvd.Max, name="c.bool.max"))


def train(model, on, steps=4):
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=[(f"{on}.{n}", p) for n, p in
                                                           model.named_parameters()])
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    g = torch.Generator().manual_seed(100 + hvd.rank())
    for _ in range(steps):
        x = torch.randn(8, 6, generator=g)
        y = torch.randn(8, 2, generator=g)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x.to(on)), y.to(on))
        loss.backward()
        optimizer.step()
    return [p.detach().cpu() for p in model.parameters()]


def test_cuda_model_trains_like_the_cpu_reference():
    torch.manual_seed(1234 + hvd.rank())  # different on each rank: the broadcast evens them
    cpu_model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    cuda_model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                                     torch.nn.Linear(8, 2))
    cuda_model.load_state_dict(cpu_model.state_dict())
    cuda_model.to(device())
    for a, b in zip(train(cuda_model, "cuda"), train(cpu_model, "cpu")):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_sync_batch_norm_on_cuda_equals_cpu():
    # The same SyncBatchNorm on CUDA and CPU inputs (each rank its own batch):
    # outputs, input gradients and running statistics agree.
    g = torch.Generator().manual_seed(77 + hvd.rank())
    x = torch.randn(4, 3, 5, 5, generator=g)
    results = []
    for on in ("cuda", "cpu"):
        bn = hvd.SyncBatchNorm(3).to(on)
        xi = x.to(on).requires_grad_()
        out = bn(xi)
        (out * out).sum().backward()
        results.append([t.detach().cpu() for t in (out, xi.grad, bn.running_mean, bn.running_var)])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
