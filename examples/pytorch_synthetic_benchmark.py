"""Synthetic-data training benchmark (Horovod's pytorch_synthetic_benchmark.py).

    build/bin/hvdrun -np 2 /usr/bin/python3 examples/pytorch_synthetic_benchmark.py
    build/bin/hvdrun -np 2 /usr/bin/python3 examples/pytorch_synthetic_benchmark.py --ddp

Trains a torchvision model (resnet50 by default) on random images with
hvd.DistributedOptimizer and prints img/sec per rank and in total. With
--ddp the same model, data and loop run with torch.distributed's
DistributedDataParallel over Gloo instead (ranks from HVD_RANK/HVD_SIZE, or
RANK/WORLD_SIZE), for a comparison on the same machine.
"""

import argparse
import os
import timeit

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
import torchvision.models

parser = argparse.ArgumentParser(description="PyTorch synthetic benchmark",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--fp16-allreduce", action="store_true", help="fp16 compression")
parser.add_argument("--model", type=str, default="resnet50", help="a torchvision model")
parser.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
parser.add_argument("--image-size", type=int, default=224, help="images are NxN")
parser.add_argument("--num-warmup-batches", type=int, default=10,
                    help="batches before the measurement")
parser.add_argument("--num-batches-per-iter", type=int, default=10,
                    help="batches per benchmark iteration")
parser.add_argument("--num-iters", type=int, default=10, help="benchmark iterations")
parser.add_argument("--ddp", action="store_true",
                    help="torch.distributed DDP (Gloo) instead of hvd, for comparison")
parser.add_argument("--ddp-port", type=int, default=29531, help="MASTER_PORT for --ddp")
args = parser.parse_args()


def setup_hvd():
    import hvd.torch as hvd
    hvd.init()
    return hvd.rank(), hvd.size(), hvd.local_size()


def setup_ddp():
    import torch.distributed as dist
    rank = int(os.environ.get("HVD_RANK", os.environ.get("RANK", "0")))
    size = int(os.environ.get("HVD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    local_size = int(os.environ.get("HVD_LOCAL_SIZE", os.environ.get("LOCAL_WORLD_SIZE",
                                                                      str(size))))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.ddp_port))
    dist.init_process_group("gloo", rank=rank, world_size=size)
    return rank, size, local_size


rank, size, local_size = setup_ddp() if args.ddp else setup_hvd()
torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_size))

model = getattr(torchvision.models, args.model)()
optimizer = optim.SGD(model.parameters(), lr=0.01 * size)

if args.ddp:
    model = torch.nn.parallel.DistributedDataParallel(model)
else:
    import hvd.torch as hvd
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
target = torch.randint(0, 1000, (args.batch_size,))


def benchmark_step():
    optimizer.zero_grad()
    output = model(data)
    loss = F.cross_entropy(output, target)
    loss.backward()
    optimizer.step()


def log(s):
    if rank == 0:
        print(s, flush=True)


log(f"Model: {args.model}")
log(f"Batch size: {args.batch_size}")
log(f"Number of CPUs: {size} ({'torch DDP over Gloo' if args.ddp else 'hvd'})")

log("Running warmup...")
timeit.timeit(benchmark_step, number=args.num_warmup_batches)

log("Running benchmark...")
img_secs = []
for x in range(args.num_iters):
    t = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
    img_sec = args.batch_size * args.num_batches_per_iter / t
    log(f"Iter #{x}: {img_sec:.1f} img/sec per CPU")
    img_secs.append(img_sec)

img_sec_mean = np.mean(img_secs)
img_sec_conf = 1.96 * np.std(img_secs)
log(f"Img/sec per CPU: {img_sec_mean:.1f} +-{img_sec_conf:.1f}")
log(f"Total img/sec on {size} CPU(s): {size * img_sec_mean:.1f} +-{size * img_sec_conf:.1f}")

if args.ddp:
    import torch.distributed as dist
    dist.destroy_process_group()
else:
    hvd.shutdown()
