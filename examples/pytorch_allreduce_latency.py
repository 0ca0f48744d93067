"""Per-call cost of the Python layer: a 1-element allreduce through hvd.torch
(autograd-aware and in place), hvd.numpy, and libhvd's blocking C call
hvd_allreduce through bare ctypes (the engine's own latency, the baseline).

    build/bin/hvdrun -np 2 /usr/bin/python3 examples/pytorch_allreduce_latency.py [--calls 1000]

Rounds of the four alternate (so that machine noise hits them alike); rank 0
prints the median microseconds of each over all calls and the difference to
the C call. As the engine's cycle (HVD_CYCLE_TIME_MS, 1 ms) dominates the
latency, it also prints the time each Python call spends outside the C wait
(hvd_wait): the Python layer's own cost per call, enqueue and release included.
"""

import argparse
import ctypes
import statistics
import time

import numpy as np
import torch

import hvd.numpy as hnp
import hvd.torch as hvd
from hvd import _lib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000, help="calls of each kind")
    parser.add_argument("--round", type=int, default=50, help="calls per kind and round")
    args = parser.parse_args()

    hvd.init()
    torch.set_num_threads(1)
    t = torch.ones(1)
    a = np.ones(1, dtype=np.float32)
    c_buf = (ctypes.c_float * 1)(1.0)
    f32, op_sum = _lib.C.FLOAT32, _lib.C.OP_SUM

    kinds = {
        "C hvd_allreduce (ctypes)": lambda: _lib.hvd_allreduce(c_buf, 1, f32, op_sum),
        "hvd.torch.allreduce_": lambda: hvd.allreduce_(t, op=hvd.Sum, name="lat.inplace"),
        "hvd.torch.allreduce": lambda: hvd.allreduce(t, op=hvd.Sum, name="lat.autograd"),
        "hvd.numpy.allreduce": lambda: hnp.allreduce(a, op=hnp.Sum, name="lat.numpy"),
    }
    times = {k: [] for k in kinds}
    outside = {k: [] for k in kinds}
    waited = [0.0]
    c_wait = _lib.hvd_wait

    def timed_wait(handle, timeout):  # the Python layer waits through _lib.hvd_wait
        t0 = time.perf_counter()
        try:
            return c_wait(handle, timeout)
        finally:
            waited[0] += time.perf_counter() - t0
    _lib.hvd_wait = timed_wait

    for fn in kinds.values():  # warm up (response cache, allocations)
        for _ in range(20):
            fn()
    rounds = max(1, args.calls // args.round)
    for _ in range(rounds):
        for k, fn in kinds.items():
            for _ in range(args.round):
                waited[0] = 0.0
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                times[k].append(dt)
                outside[k].append(dt - waited[0])

    if hvd.rank() == 0:
        base = statistics.median(times["C hvd_allreduce (ctypes)"]) * 1e6
        print(f"1-element float32 allreduce, {hvd.size()} ranks, {rounds * args.round} calls each "
              "(median µs)")
        for k, v in times.items():
            med = statistics.median(v) * 1e6
            own = statistics.median(outside[k]) * 1e6
            own_text = f"   {own:6.1f} outside hvd_wait" if not k.startswith("C ") else ""
            print(f"  {k:28s} {med:8.1f}   {med - base:+7.1f} vs C{own_text}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
