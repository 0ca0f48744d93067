"""Elastic PyTorch training with hvd, written as for horovod.torch.elastic.

    hvdrun -np 4 --min-np 2 --max-np 4 /usr/bin/python3 examples/pytorch_elastic.py

A synthetic classification task (no download). The state (model, optimizer,
sampler, epoch) is committed every --batches-per-commit batches; when
a worker dies, the others roll back to the last commit and go on at the
smaller size, and the replacement hvdrun starts joins at their next commit
(docs/elastic.md). Under --horovod-compat, `import horovod.torch as hvd`
works the same.
"""

import argparse

import torch
import torch.nn.functional as F

import hvd.torch as hvd


def dataset(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    w = torch.randn(20, 4, generator=g)
    return torch.utils.data.TensorDataset(x, (x @ w).argmax(dim=1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--train-size", type=int, default=2048)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batches-per-commit", type=int, default=4)
    args = p.parse_args()

    hvd.init()
    torch.manual_seed(42)
    data = dataset(args.train_size)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    # Scale the learning rate with the world size at every reset (callback below).
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=1)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, sampler=sampler)

    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=0)

    def on_reset():
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, args.epochs):
            model.train()
            total, batches = 0.0, 0
            # The sampler yields what this epoch has not processed yet (all of
            # it at first; the rest after a reset), split over the current world.
            for idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                sampler.record_batch(idx, args.batch_size)
                total += loss.item()
                batches += 1
                if (idx + 1) % args.batches_per_commit == 0:
                    state.commit()
            mean = hvd.allreduce(torch.tensor(total / max(batches, 1)), name="epoch_loss")
            if hvd.rank() == 0:
                print(f"epoch {state.epoch}: loss {mean.item():.4f} on {hvd.size()} workers",
                      flush=True)
            sampler.set_epoch(state.epoch + 1)
            state.commit()

    train(state)
    model.eval()
    with torch.no_grad():
        x, y = data.tensors
        accuracy = (model(x).argmax(dim=1) == y).float().mean()
    accuracy = hvd.allreduce(accuracy, name="accuracy")
    if hvd.rank() == 0:
        print(f"accuracy {accuracy.item() * 100:.1f}%", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
