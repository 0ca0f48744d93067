"""Data-parallel training of a small CNN on generated MNIST-like digits.

    build/bin/hvdrun -np 2 /usr/bin/python3 examples/pytorch_mnist.py

No download: the data are 28x28 images of ten random "digit" templates plus
noise and a random shift, the same on every rank (seeded), each rank taking
its own shard. Uses hvd.DistributedOptimizer and hvd.broadcast_parameters as
a Horovod script would (replace `import hvd.torch as hvd` by
`import horovod.torch as hvd` and it runs under Horovod too).

--cuda trains on the GPU of each rank's local rank (torch.cuda.set_device),
as Horovod's example does: the gradients are CUDA tensors, averaged by the
GPU transport (HVD_GPU_TRANSPORT: nccl, or gloo staging through host memory
where several ranks share one GPU; docs/gpu.md).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import hvd.torch as hvd


def make_dataset(n, seed):
    """n images (1x28x28) of 10 classes, and their labels."""
    g = torch.Generator().manual_seed(seed)
    templates = (torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0)) > 0.7)
    templates = F.avg_pool2d(templates.float(), 3, stride=1, padding=1)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = templates[labels] + 0.5 * torch.randn(n, 1, 28, 28, generator=g)
    shifts = torch.randint(-2, 3, (n, 2), generator=g)
    for i in range(n):
        images[i] = torch.roll(images[i], shifts=(int(shifts[i, 0]), int(shifts[i, 1])),
                               dims=(1, 2))
    return images, labels


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def metric_average(value, name):
    return hvd.allreduce(torch.tensor(float(value)), name=name).item()


def main():
    parser = argparse.ArgumentParser(description="hvd PyTorch MNIST-like example")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.02, help="scaled by the number of ranks")
    parser.add_argument("--train-size", type=int, default=8192)
    parser.add_argument("--test-size", type=int, default=1024)
    parser.add_argument("--fp16-allreduce", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--cuda", action="store_true", help="train on the local rank's GPU")
    args = parser.parse_args()
    if args.cuda and not torch.cuda.is_available():
        parser.error("--cuda: torch.cuda.is_available() is false (no usable GPU here)")

    hvd.init()
    device = torch.device("cpu")
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, torch.get_num_threads() // hvd.local_size()))

    train_x, train_y = make_dataset(args.train_size, seed=1)
    test_x, test_y = make_dataset(args.test_size, seed=2)
    # Each rank takes every size()-th example, as DistributedSampler does.
    train_x, train_y = train_x[hvd.rank()::hvd.size()], train_y[hvd.rank()::hvd.size()]
    test_x, test_y = test_x[hvd.rank()::hvd.size()], test_y[hvd.rank()::hvd.size()]
    train_x, train_y = train_x.to(device), train_y.to(device)
    test_x, test_y = test_x.to(device), test_y.to(device)

    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)

    for epoch in range(1, args.epochs + 1):
        start = time.time()
        model.train()
        g = torch.Generator().manual_seed(args.seed + epoch)
        order = torch.randperm(len(train_x), generator=g).to(device)
        total_loss, batches = 0.0, 0
        for i in range(0, len(order) - args.batch_size + 1, args.batch_size):
            idx = order[i:i + args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            batches += 1

        model.eval()
        with torch.no_grad():
            logits = model(test_x)
            test_loss = F.cross_entropy(logits, test_y).item()
            accuracy = (logits.argmax(1) == test_y).float().mean().item()
        train_loss = metric_average(total_loss / max(batches, 1), "avg_train_loss")
        test_loss = metric_average(test_loss, "avg_test_loss")
        accuracy = metric_average(accuracy, "avg_accuracy")
        if hvd.rank() == 0:
            print(f"epoch {epoch}: train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
                  f"accuracy {100 * accuracy:.1f}%  ({time.time() - start:.1f} s, "
                  f"{hvd.size()} ranks)", flush=True)

    hvd.shutdown()


if __name__ == "__main__":
    main()
