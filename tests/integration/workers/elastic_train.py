"""An elastic training run for tests/integration/test_elastic.py:
    elastic_train.py MARKER VICTIM KILL_AT STEPS [kill|stop] [SLEEP_S]
Rank VICTIM kills itself with SIGKILL (or stops itself with SIGSTOP: hvdrun
must notice the missing heartbeats) right after step KILL_AT's update, once
(MARKER records that it did; VICTIM -1: nobody fails). Every rank prints
"COMMIT step size" for each step it completed, before committing it (a
completed step is never rolled back on a rank that survives), so the test
can replay the committed steps at the world sizes they ran at. Each rank's data
depends only on (rank, step), so the final parameters are a deterministic
function of the committed steps. Prints "final RANK v1 v2 ..." at the end."""

import os
import signal
import sys
import time

import torch

import hvd.torch as hvd

marker, victim, kill_at, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
how = signal.SIGSTOP if len(sys.argv) > 5 and sys.argv[5] == "stop" else signal.SIGKILL
pause = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0

hvd.init()
torch.manual_seed(7)
model = torch.nn.Linear(4, 1).double()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                               named_parameters=model.named_parameters())
state = hvd.elastic.TorchState(model, opt, batch=0)


def data(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 4, generator=g, dtype=torch.float64)
    return x, x.sum(dim=1, keepdim=True) * 0.5


@hvd.elastic.run
def train(state):
    while state.batch < steps:
        x, y = data(hvd.rank(), state.batch)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if hvd.rank() == victim and state.batch == kill_at and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), how)
        print("COMMIT", state.batch, hvd.size(), flush=True)
        state.batch += 1
        state.commit()
        time.sleep(pause)


train(state)
values = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
print("final", hvd.rank(), " ".join(repr(v) for v in values), flush=True)
hvd.shutdown()
