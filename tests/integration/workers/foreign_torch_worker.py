"""Integration worker started by torchrun (no hvdrun): `import hvd.torch`,
hvd.init() finds torchrun's variables (rank 0 hosts the rendezvous), and the
world must match RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE. Prints
"foreign_torch_worker: rank R OK" and exits 0; raises otherwise."""
import os
import sys

import torch

import hvd.torch as hvd


def main():
    hvd.init()
    expected = {
        "rank": int(os.environ["RANK"]),
        "size": int(os.environ["WORLD_SIZE"]),
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "local_size": int(os.environ["LOCAL_WORLD_SIZE"]),
        "cross_rank": int(os.environ["GROUP_RANK"]),
        "cross_size": 1,
    }
    got = {name: getattr(hvd, name)() for name in expected}
    assert got == expected, f"hvd says {got}, torchrun says {expected}"

    size = hvd.size()
    summed = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum)
    assert summed.tolist() == [size * (size + 1) / 2] * 4, summed
    averaged = hvd.allreduce(torch.arange(3, dtype=torch.float64) * (hvd.rank() + 1))
    assert averaged.tolist() == [0.0, (size + 1) / 2, size + 1.0], averaged
    gathered = hvd.allgather(torch.tensor([hvd.rank()]))
    assert gathered.tolist() == list(range(size)), gathered
    hvd.shutdown()
    # One write for the whole line: both workers share the pipe, and print()
    # may write the text and its newline separately (lines interleaved).
    sys.stdout.flush()
    os.write(1, f"foreign_torch_worker: rank {expected['rank']} OK\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
