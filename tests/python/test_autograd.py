"""Gradients of the autograd-aware collectives, checked numerically.

The objective is the sum over the ranks of each rank's local loss
L_r = sum(w_r * op(x_r)) (w_r: fixed random weights). Each rank's backward
gives dF/dx_r; a central difference of F (every rank runs the forward, one
rank's input perturbed, F = allreduce-sum of the L_r) must agree, element by
element, on every rank.

hvd computes exactly horovod.torch's gradients, and Horovod averages (rather
than sums) the incoming gradients of allgather and broadcast, and scales
reducescatter's by the number of ranks: for those ops the autograd gradient
is the gradient of F times a fixed factor (1/size, resp. size), which is
what `factor` says. test_horovod_conformance.py checks Horovod's documented
values directly.
"""

import pytest
import torch

import hvd.torch as hvd

EPS = 1e-6


def check_gradient(forward, shape_of, factor=1.0):
    """forward(x) -> tensor (runs collectives); shape_of(rank) -> x's shape;
    the autograd gradient must be `factor` times dF/dx."""
    r, n = hvd.rank(), hvd.size()
    gen = torch.Generator().manual_seed(1234 + r)
    x = torch.randn(shape_of(r), dtype=torch.float64, generator=gen)
    with torch.no_grad():
        out_shape = forward(x).shape
    w = torch.randn(out_shape, dtype=torch.float64, generator=gen)

    xg = x.clone().requires_grad_(True)
    (forward(xg) * w).sum().backward()
    analytic = xg.grad.reshape(-1)

    for q in range(n):
        numel = int(torch.Size(shape_of(q)).numel())
        for i in range(numel):
            values = []
            for sign in (1.0, -1.0):
                xx = x.clone()
                if r == q:
                    xx.view(-1)[i] += sign * EPS
                with torch.no_grad():
                    local = (forward(xx) * w).sum()
                    values.append(hvd.allreduce(local.reshape(1), op=hvd.Sum).item())
            numeric = factor * (values[0] - values[1]) / (2 * EPS)
            if r == q:
                a = analytic[i].item()
                assert abs(a - numeric) <= 1e-5 * max(1.0, abs(numeric)), \
                    f"rank {q} element {i}: autograd {a}, numeric {numeric}"


def square(r):
    return (2, 2)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=repr)
def test_allreduce_grad(op):
    check_gradient(lambda x: hvd.allreduce(x, op=op), square)


def test_allreduce_scaled_grad():
    check_gradient(lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0,
                                           postscale_factor=0.5), square)
    check_gradient(lambda x: hvd.allreduce(x, op=hvd.Average, prescale_factor=3.0), square)


def test_allreduce_nonlinear_use_grad():
    # The collective inside a computation: gradients flow through x * allreduce(x).
    check_gradient(lambda x: x * hvd.allreduce(x.sin(), op=hvd.Sum), square)


def test_grouped_allreduce_grad():
    def forward(x):
        outs = hvd.grouped_allreduce([x, 3 * x[:1]], op=hvd.Average)
        return torch.cat([o.reshape(-1) for o in outs])
    check_gradient(forward, square)


def test_allgather_grad():
    check_gradient(lambda x: hvd.allgather(x), lambda r: (r + 1, 2),  # uneven rows
                   factor=1.0 / hvd.size())


def test_grouped_allgather_grad():
    def forward(x):
        outs = hvd.grouped_allgather([x, 2 * x])
        return torch.cat([o.reshape(-1) for o in outs])
    check_gradient(forward, lambda r: (r + 1, 1), factor=1.0 / hvd.size())


@pytest.mark.parametrize("root", ["first", "last"])
def test_broadcast_grad(root):
    root_rank = 0 if root == "first" else hvd.size() - 1
    check_gradient(lambda x: hvd.broadcast(x, root_rank=root_rank), square,
                   factor=1.0 / hvd.size())


def splits_of(r, n):
    return [(r + k) % 2 + 1 for k in range(n)]


def test_alltoall_grad():
    n = hvd.size()

    def forward(x):
        out, received = hvd.alltoall(x, splits=splits_of(hvd.rank(), n))
        assert not received.requires_grad
        return out
    check_gradient(forward, lambda r: (sum(splits_of(r, n)), 2))


def test_alltoall_even_grad():
    check_gradient(lambda x: hvd.alltoall(x), lambda r: (2 * hvd.size(), 1))


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=repr)
def test_reducescatter_grad(op):
    n = hvd.size()
    check_gradient(lambda x: hvd.reducescatter(x, op=op), lambda r: (2 * n + 1, 1), factor=n)


def test_reducescatter_scaled_grad():
    n = hvd.size()
    check_gradient(lambda x: hvd.reducescatter(x, op=hvd.Sum, prescale_factor=2.0,
                                               postscale_factor=0.25), lambda r: (n, 2),
                   factor=n)


def test_grouped_reducescatter_grad():
    n = hvd.size()

    def forward(x):
        outs = hvd.grouped_reducescatter([x, x * x], op=hvd.Average)
        return torch.cat([o.reshape(-1) for o in outs])
    check_gradient(forward, lambda r: (n, 2), factor=n)


def test_sync_batch_norm_grad():
    bn = hvd.SyncBatchNorm(2).double()
    bn.train()

    def forward(x):
        return bn(x)
    check_gradient(forward, lambda r: (r + 2, 2, 2))  # uneven batches


def test_in_place_ops_are_not_differentiable_paths():
    # Horovod's allreduce_ works on data, outside autograd: no graph is recorded.
    x = torch.ones(3, requires_grad=True)
    y = x.detach().clone()
    hvd.allreduce_(y, op=hvd.Sum)
    assert y.grad_fn is None
