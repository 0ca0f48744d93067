"""Elastic training under hvdrun inside a Slurm allocation (test_slurm_elastic.py):

    hvdrun --min-np 2 --max-np 4 --host-discovery-script ... python3 slurm_elastic.py STEPS

A tiny model trains for STEPS committed steps, 0.2 s apart, so that the test
can take a node out of the allocation mid-run. Rank 0 prints
"slurm_elastic: step S size N" after each step and "slurm_elastic: done at
size N" at the end; the parameters must agree on every rank then."""
import sys
import time

import torch

import hvd.torch as hvd


def main():
    steps = int(sys.argv[1])
    hvd.init()
    torch.manual_seed(5)
    model = torch.nn.Linear(4, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=opt, step=0)

    @hvd.elastic.run
    def train(state):
        while state.step < steps:
            g = torch.Generator().manual_seed(state.step * 100 + hvd.rank())
            x = torch.randn(16, 4, generator=g)
            loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if hvd.rank() == 0:
                print(f"slurm_elastic: step {state.step} size {hvd.size()}", flush=True)
            state.step += 1
            state.commit()
            time.sleep(0.2)

    train(state)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(hvd.allreduce(flat, op=hvd.Min, name="min"),
                       hvd.allreduce(flat, op=hvd.Max, name="max")), "parameters differ"
    if hvd.rank() == 0:
        print(f"slurm_elastic: done at size {hvd.size()}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
