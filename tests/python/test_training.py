"""Training helpers: DistributedOptimizer equivalence with single-process
training, broadcast_parameters / optimizer_state / object, allgather_object,
SyncBatchNorm, join with uneven batches."""

import warnings

import pytest
import torch
import torch.nn as nn

import hvd.torch as hvd

STEPS = 4
PER_RANK = 6  # rows per rank and step; the full batch has PER_RANK * size rows


def make_model(seed=7, batch_norm=None):
    torch.manual_seed(seed)
    layers = [nn.Linear(5, 8)]
    if batch_norm is not None:
        layers.append(batch_norm(8))
    layers += [nn.Tanh(), nn.Linear(8, 3)]
    return nn.Sequential(*layers).double()


def batches(step):
    g = torch.Generator().manual_seed(100 + step)
    n = PER_RANK * hvd.size()
    return torch.randn(n, 5, generator=g, dtype=torch.float64), \
        torch.randn(n, 3, generator=g, dtype=torch.float64)


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


def train_single(model, steps=STEPS, make_opt=None):
    """One process, full batches: the reference."""
    opt = (make_opt or default_opt)(model)
    for step in range(steps):
        x, y = batches(step)
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        opt.step()
    return model


def default_opt(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train_distributed(model, steps=STEPS, backward_passes_per_step=1, make_opt=None, **kw):
    """This rank's share of each full batch, gradients averaged by hvd."""
    opt = hvd.DistributedOptimizer((make_opt or default_opt)(model),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=backward_passes_per_step, **kw)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    r = hvd.rank()
    for step in range(steps):
        x, y = batches(step)
        x, y = x[r * PER_RANK:(r + 1) * PER_RANK], y[r * PER_RANK:(r + 1) * PER_RANK]
        opt.zero_grad()
        micro = PER_RANK // backward_passes_per_step
        for k in range(backward_passes_per_step):
            sl = slice(k * micro, (k + 1) * micro)
            (loss_fn(model, x[sl], y[sl]) / backward_passes_per_step).backward()
        opt.step()
    return model


def assert_models_close(a, b, tol):
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        if pa.dtype.is_floating_point:
            assert torch.allclose(pa, pb, rtol=tol, atol=tol), \
                f"{name}: max difference {(pa - pb).abs().max().item()}"


def assert_same_on_every_rank(model):
    for name, p in model.state_dict().items():
        gathered = hvd.allgather(p.detach().reshape(1, -1).double())
        assert torch.allclose(gathered, gathered[:1].expand_as(gathered), rtol=0, atol=1e-12), \
            f"{name} differs between ranks"


# ---- DistributedOptimizer ----------------------------------------------------------------

def test_equivalence_with_single_process():
    ref = train_single(make_model())
    dist = train_distributed(make_model())
    assert_models_close(dist, ref, 1e-10)
    assert_same_on_every_rank(dist)


def test_equivalence_backward_passes_per_step_2():
    ref = train_single(make_model())
    dist = train_distributed(make_model(), backward_passes_per_step=2)
    assert_models_close(dist, ref, 1e-10)


def test_equivalence_fp16_compression():
    ref = train_single(make_model())
    dist = train_distributed(make_model(), compression=hvd.Compression.fp16)
    assert_models_close(dist, ref, 5e-3)
    assert_same_on_every_rank(dist)


def test_equivalence_fp16_and_backward_passes():
    ref = train_single(make_model())
    dist = train_distributed(make_model(), backward_passes_per_step=2,
                             compression=hvd.Compression.fp16)
    assert_models_close(dist, ref, 5e-3)


def test_equivalence_gradient_predivide_factor():
    ref = train_single(make_model())
    dist = train_distributed(make_model(), gradient_predivide_factor=2.0)
    assert_models_close(dist, ref, 1e-10)


@pytest.mark.parametrize("groups", ["int", "lists"])
def test_equivalence_groups(groups):
    ref = train_single(make_model())
    model = make_model()
    g = 2 if groups == "int" else [[model[0].weight, model[2].bias]]
    dist = train_distributed(model, groups=g)
    assert_models_close(dist, ref, 1e-10)


def test_equivalence_adam_and_sum_op():
    def adam(model):
        return torch.optim.Adam(model.parameters(), lr=0.01)
    ref = train_single(make_model(), make_opt=adam)
    # Sum of the ranks' gradients of loss/size is the full-batch gradient too.
    model = make_model()
    opt = hvd.DistributedOptimizer(adam(model), named_parameters=model.named_parameters(),
                                   op=hvd.Sum)
    r, n = hvd.rank(), hvd.size()
    for step in range(STEPS):
        x, y = batches(step)
        sl = slice(r * PER_RANK, (r + 1) * PER_RANK)
        opt.zero_grad()
        (loss_fn(model, x[sl], y[sl]) / n).backward()
        opt.step()
    assert_models_close(model, ref, 1e-9)


def test_synchronize_then_skip_synchronize():
    model = make_model()
    opt = hvd.DistributedOptimizer(default_opt(model), named_parameters=model.named_parameters())
    x, y = batches(0)
    r = hvd.rank()
    sl = slice(r * PER_RANK, (r + 1) * PER_RANK)
    loss_fn(model, x[sl], y[sl]).backward()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with opt.skip_synchronize():
            opt.step()
    assert_same_on_every_rank(model)


def test_zero_grad_between_backward_and_step_is_refused():
    model = make_model()
    opt = hvd.DistributedOptimizer(default_opt(model), named_parameters=model.named_parameters())
    x, y = batches(0)
    loss_fn(model, x, y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.synchronize()  # complete the allreduces every rank started


def test_unused_parameters_on_some_ranks():
    torch.manual_seed(3)
    a, b = nn.Linear(2, 1).double(), nn.Linear(2, 1).double()
    params = list(a.named_parameters(prefix="a")) + list(b.named_parameters(prefix="b"))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=1.0),
                                   named_parameters=params)
    x = torch.ones(1, 2, dtype=torch.float64)
    out = a(x) + (b(x) if hvd.rank() == 0 else 0)  # b has a gradient on rank 0 only
    out.sum().backward()
    opt.synchronize()
    assert torch.allclose(b.bias.grad, torch.tensor([1.0 / hvd.size()], dtype=torch.float64))
    assert torch.allclose(a.bias.grad, torch.tensor([1.0], dtype=torch.float64))
    with opt.skip_synchronize():
        opt.step()


def test_named_parameters_validation():
    model = make_model()
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(default_opt(model),
                                 named_parameters=[("same", p) for p in model.parameters()])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(default_opt(model),
                                 named_parameters=list(model.named_parameters())[:1])
    with pytest.raises(NotImplementedError, match="Adasum"):
        hvd.DistributedOptimizer(default_opt(model), op=hvd.Adasum)
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(default_opt(model), backward_passes_per_step=0)


# ---- SyncBatchNorm ----------------------------------------------------------------------------

def test_sync_batch_norm_matches_full_batch_batch_norm():
    ref = train_single(make_model(batch_norm=nn.BatchNorm1d))
    dist = train_distributed(make_model(batch_norm=hvd.SyncBatchNorm))
    assert_models_close(dist, ref, 1e-9)  # parameters and running statistics
    assert int(dist[1].num_batches_tracked) == STEPS
    dist.eval()
    ref.eval()
    x, _ = batches(99)
    assert torch.allclose(dist(x), ref(x), atol=1e-9)


# ---- broadcast helpers ----------------------------------------------------------------------

def test_broadcast_parameters_forms():
    r = hvd.rank()
    torch.manual_seed(r)  # a different model on every rank
    model = nn.Linear(3, 2)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    assert_same_on_every_rank(model)
    torch.manual_seed(r + 10)
    model = nn.Linear(3, 2)
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=hvd.size() - 1)
    assert_same_on_every_rank(model)
    torch.manual_seed(r + 20)
    model = nn.Linear(3, 2)
    hvd.broadcast_parameters(list(model.parameters()), root_rank=0)
    assert_same_on_every_rank(model)


def test_broadcast_optimizer_state():
    r = hvd.rank()
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1), betas=(0.8 + 0.01 * r, 0.999))
    x, y = batches(r)  # a different step on every rank: different state
    loss_fn(model, x, y).backward()
    opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    assert opt.param_groups[0]["betas"] == pytest.approx((0.8, 0.999))
    assert isinstance(opt.param_groups[0]["betas"], tuple)
    for state in opt.state.values():
        for key, value in sorted(state.items()):
            if torch.is_tensor(value):
                gathered = hvd.allgather(value.detach().reshape(1, -1).double())
                assert torch.equal(gathered, gathered[:1].expand_as(gathered)), key


def test_broadcast_optimizer_state_of_new_optimizer():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1),
                                                   momentum=0.9),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9)


def test_broadcast_and_allgather_object():
    r, n = hvd.rank(), hvd.size()
    obj = {"rank": r, "payload": list(range(r * 3))}
    got = hvd.broadcast_object(obj, root_rank=n - 1)
    assert got == {"rank": n - 1, "payload": list(range((n - 1) * 3))}
    assert hvd.allgather_object(obj) == [{"rank": s, "payload": list(range(s * 3))}
                                         for s in range(n)]


# ---- join ------------------------------------------------------------------------------------

def test_join_with_uneven_batches():
    r, n = hvd.rank(), hvd.size()
    for i in range(r + 1):  # rank r has r+1 batches
        out = hvd.allreduce(torch.full((3,), float(r + 1)), op=hvd.Average, name=f"uneven.{i}")
        contributors = [s for s in range(n) if s + 1 > i]
        expected = sum(s + 1 for s in contributors) / n  # joined ranks add zeros
        assert torch.allclose(out, torch.full((3,), expected)), (i, out)
    assert hvd.join() == n - 1


def test_join_with_distributed_optimizer():
    r, n = hvd.rank(), hvd.size()
    model = make_model()
    opt = hvd.DistributedOptimizer(default_opt(model), named_parameters=model.named_parameters())
    for step in range(r + 2):  # uneven number of steps
        x, y = batches(step)
        opt.zero_grad()
        loss_fn(model, x[:PER_RANK], y[:PER_RANK]).backward()
        opt.step()
    assert hvd.join() == n - 1
    hvd.barrier()
