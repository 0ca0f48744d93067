"""A tiny data-parallel training run started by srun (no hvdrun): hvd.init()
reads Slurm's variables, the world must match them, a linear model trains
for STEPS steps with DistributedOptimizer and ends with the same parameters
on every rank.

    srun -N2 -n4 python3 slurm_train.py [--steps N] [--die-rank R --die-at S]

Prints one line per rank, "slurm_train: rank R/N node NODE local L/LS: loss
A -> B, in sync", and exits 0. --die-rank R: rank R kills itself with SIGKILL
right after step --die-at (a task killed: the step must end)."""
import argparse
import os
import signal
import sys

import torch

import hvd.torch as hvd


def say(text):
    # One write per line: the tasks of a node share srun's pipe.
    sys.stdout.flush()
    os.write(1, (text + "\n").encode())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--die-rank", type=int, default=-1)
    p.add_argument("--die-at", type=int, default=3)
    args = p.parse_args()

    hvd.init()
    node = os.environ.get("SLURMD_NODENAME", "?")
    expected = {"rank": int(os.environ["SLURM_PROCID"]), "size": int(os.environ["SLURM_NTASKS"]),
                "local_rank": int(os.environ["SLURM_LOCALID"])}
    got = {name: getattr(hvd, name)() for name in expected}
    assert got == expected, f"hvd says {got}, Slurm says {expected}"

    torch.manual_seed(1234 + hvd.rank())  # different starts: the broadcast must align them
    model = torch.nn.Linear(8, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    g = torch.Generator().manual_seed(7)
    w_true = torch.randn(8, 1, generator=g)
    first = last = None
    for step in range(args.steps):
        x = torch.randn(32, 8, generator=torch.Generator().manual_seed(step * 1000 + hvd.rank()))
        loss = torch.nn.functional.mse_loss(model(x), x @ w_true)
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = hvd.allreduce(loss.detach(), name="loss").item()
        first = avg if first is None else first
        last = avg
        if hvd.rank() == args.die_rank and step == args.die_at:
            say(f"slurm_train: rank {hvd.rank()} on node {node} kills itself")
            os.kill(os.getpid(), signal.SIGKILL)
    flat = torch.cat([t.detach().reshape(-1) for t in model.parameters()])
    lowest = hvd.allreduce(flat, op=hvd.Min, name="params.min")
    highest = hvd.allreduce(flat, op=hvd.Max, name="params.max")
    assert torch.equal(lowest, highest), "the ranks' parameters differ"
    assert last < first, f"the loss did not go down: {first} -> {last}"
    say(f"slurm_train: rank {hvd.rank()}/{hvd.size()} node {node} local "
        f"{hvd.local_rank()}/{hvd.local_size()}: loss {first:.4f} -> {last:.4f}, in sync")
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
