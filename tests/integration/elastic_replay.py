"""The checks of elastic training runs (tests/integration/test_elastic.py,
tests/multihost/test_multihost_elastic.py) over the output of
workers/elastic_train.py: the final parameters of each rank, the world size
of each committed step, and a replay of those steps in one process."""
import re

FINAL = re.compile(r"^\[(\d+)\]<stdout>:final (\d+) (.*)$", re.M)
COMMIT = re.compile(r"<stdout>:COMMIT (\d+) (\d+)$", re.M)
STEPS = 40  # the tests' default run length


def finals(stdout):
    return {int(m.group(2)): [float(v) for v in m.group(3).split()] for m in FINAL.finditer(stdout)}


def committed(stdout, steps=STEPS):
    """{step: world size} of every committed step (all ranks print them)."""
    sizes = {}
    for m in COMMIT.finditer(stdout):
        step, size = int(m.group(1)), int(m.group(2))
        assert sizes.setdefault(step, size) == size, f"step {step} ran at two sizes"
    assert sorted(sizes) == list(range(steps)), sorted(sizes)
    return sizes


def replay(sizes):
    """The parameters of the committed steps, recomputed in one process: the
    gradient of step s averaged over ranks 0..size-1 (their data depends only
    on rank and step), SGD with momentum as in the worker."""
    import torch
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 1).double()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(len(sizes)):
        n = sizes[step]
        grads = [torch.zeros_like(p) for p in model.parameters()]
        for rank in range(n):
            g = torch.Generator().manual_seed(1000 * step + rank)
            x = torch.randn(8, 4, generator=g, dtype=torch.float64)
            model.zero_grad()
            torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) * 0.5).backward()
            for acc, p in zip(grads, model.parameters()):
                acc += p.grad
        for acc, p in zip(grads, model.parameters()):
            p.grad = acc / n
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def close_to(got, want):
    return len(got) == len(want) and all(abs(a - b) <= 1e-9 * max(1.0, abs(b))
                                         for a, b in zip(got, want))
