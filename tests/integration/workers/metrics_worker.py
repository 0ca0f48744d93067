"""A steady job for tests/integration/test_metrics*.py:
    metrics_worker.py END_FILE [SLEEP_S]
Each rank runs 1 KiB allreduces (and a broadcast every tenth step), SLEEP_S
(default 0.02) apart, until END_FILE exists (at most 120 s), then shuts down.
Prints "step N" every 50 steps."""
import os
import sys
import time

import numpy as np

import hvd.numpy as hvd

end_file = sys.argv[1]
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
hvd.init()
deadline = time.monotonic() + 120
step = 0
while not os.path.exists(end_file) and time.monotonic() < deadline:
    hvd.allreduce(np.ones(256, np.float32), name="grad")
    if step % 10 == 0:
        hvd.broadcast(np.zeros(4, np.float32), root_rank=0, name="bcast")
    step += 1
    if step % 50 == 0:
        print(f"step {step}", flush=True)
    time.sleep(pause)
hvd.shutdown()
