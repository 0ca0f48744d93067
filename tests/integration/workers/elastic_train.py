"""An elastic training run for tests/integration/test_elastic.py:
    elastic_train.py MARKER VICTIM KILL_AT STEPS [kill|stop|raise] [SLEEP_S]
Rank VICTIM kills itself with SIGKILL (or stops itself with SIGSTOP: hvdrun
must notice the missing heartbeats; or raises an exception out of the
training function) right after step KILL_AT's update, once (MARKER records
that it did; VICTIM -1: nobody fails). ELASTIC_KILLS="R:S,R:S,..." in the
environment adds more: rank R kills itself after step S, once each. With HOSTS_FILE in the environment
(the file a discovery script prints), rank 0 writes HOSTS_GROW into it after
step 5, and HOSTS_SHRINK once 5 steps ran at a size above the first one. Every rank prints
"COMMIT step size" for each step it completed, before committing it (a
completed step is never rolled back on a rank that survives), so the test
can replay the committed steps at the world sizes they ran at. Each rank's data
depends only on (rank, step), so the final parameters are a deterministic
function of the committed steps. Prints "final RANK v1 v2 ..." at the end.
With ELASTIC_FULL_SIZE=N in the environment the last step waits (at most
60 s) until the job is back at N workers, so a replacement started late in
the run still joins before training ends (check_host_updates lets it in).
With ELASTIC_DEVICE_OPS=1 every step also runs a device allreduce (device =
local rank, through the C ABI: HVD_GPU_TRANSPORT names the GPU transport,
fakecuda here) after the kill point, so the survivors of a kill are inside a
device collective when the job resets; its result is checked.
With ELASTIC_SPARES_DIR (hvdrun --spares): a hot spare writes its pid into
DIR/spare.ID before hvd.init(); a victim waits (at most 60 s) until
ELASTIC_SPARES_WAIT such files exist (then 0.5 s more: the spare waits in
hvd.init()) before it fails; rank 0 kills the first spare (DIR's lowest id)
after step ELASTIC_KILL_SPARE_AT; a promoted spare prints "promoted RANK"."""

import os
import signal
import sys
import time

import torch

import hvd.torch as hvd

marker, victim, kill_at, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
how = sys.argv[5] if len(sys.argv) > 5 else "kill"
pause = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0

spares_dir = os.environ.get("ELASTIC_SPARES_DIR")
if spares_dir and os.environ.get("HVD_SPARE"):
    with open(os.path.join(spares_dir, "spare." + os.environ["HVD_SPARE"]), "w") as f:
        f.write(str(os.getpid()))


def spare_files():
    if not spares_dir:
        return []
    return sorted((f for f in os.listdir(spares_dir) if f.startswith("spare.")),
                  key=lambda f: int(f.split(".")[1]))


def wait_for_spares():
    want = int(os.environ.get("ELASTIC_SPARES_WAIT", "1"))
    deadline = time.monotonic() + 60
    while spares_dir and len(spare_files()) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    if spares_dir:
        time.sleep(0.5)


def kill_first_spare(step):
    if spares_dir and hvd.rank() == 0 and step == int(os.environ.get("ELASTIC_KILL_SPARE_AT", -1)):
        first = spare_files()[0]
        with open(os.path.join(spares_dir, first)) as f:
            pid = int(f.read())
        os.rename(os.path.join(spares_dir, first), os.path.join(spares_dir, "killed." + first))
        os.kill(pid, signal.SIGKILL)


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


kills = [tuple(map(int, k.split(":"))) for k in os.environ.get("ELASTIC_KILLS", "").split(",") if k]
device_ops = os.environ.get("ELASTIC_DEVICE_OPS") == "1"


def device_allreduce(step):
    """A sum of (rank + 1) over the world, as a device op of this rank's
    device; HorovodInternalError (hvd.elastic.run resets) when it fails."""
    import ctypes

    import numpy as np

    from hvd._collectives import enqueue
    from hvd._lib import C, make_op
    a = np.full(4, hvd.rank() + 1, dtype=np.float32)
    dims = (ctypes.c_int64 * 1)(4)
    op = make_op(op_type=C.OPTYPE_ALLREDUCE, name=f"device.{step}".encode(), input=a.ctypes.data,
                 output=a.ctypes.data, shape=dims, ndim=1, dtype=C.FLOAT32,
                 device=hvd.local_rank(), reduce_op=C.OP_SUM)
    enqueue.submit(enqueue.Prep(op, (a, dims), lambda hid: a), "allreduce").wait()
    n = hvd.size()
    assert (a == n * (n + 1) / 2).all(), (a, n)
hosts_file = os.environ.get("HOSTS_FILE")
grown_steps = [0]


def change_hosts(step, size):
    """Rank 0 drives host discovery: HOSTS_GROW after step 5, HOSTS_SHRINK
    once 5 steps ran above the first size (each once: the file says which)."""
    if not hosts_file:
        return
    with open(hosts_file) as f:
        now = f.read()
    if step >= 5 and now == os.environ.get("HOSTS_START"):
        write(os.environ["HOSTS_GROW"])
    elif now == os.environ["HOSTS_GROW"] and size > int(os.environ["HOSTS_START_SIZE"]):
        grown_steps[0] += 1
        if grown_steps[0] == 5:
            write(os.environ["HOSTS_SHRINK"])


def write(text):
    with open(hosts_file + ".tmp", "w") as f:
        f.write(text)
    os.replace(hosts_file + ".tmp", hosts_file)


full_size = int(os.environ.get("ELASTIC_FULL_SIZE", "0"))


def wait_for_full_size(state):
    """Collective, on every rank at the last step: poll the host updates
    until the replacement joins (HostsUpdatedInterrupt resets the job to
    the full size and the last step runs again there)."""
    deadline = time.monotonic() + 60
    while hvd.size() < full_size and time.monotonic() < deadline:
        time.sleep(0.05)
        state.check_host_updates()


@hvd.elastic.run
def train(state):
    while state.batch < steps:
        if state.batch == steps - 1:
            wait_for_full_size(state)
        x, y = data(hvd.rank(), state.batch)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        for r, s in kills:
            if hvd.rank() == r and state.batch == s and not os.path.exists(f"{marker}.{r}.{s}"):
                open(f"{marker}.{r}.{s}", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        kill_first_spare(state.batch)
        if hvd.rank() == victim and state.batch == kill_at and not os.path.exists(marker):
            wait_for_spares()
            open(marker, "w").close()
            if how == "raise":
                raise RuntimeError(f"rank {hvd.rank()} fails at step {state.batch}")
            os.kill(os.getpid(), signal.SIGSTOP if how == "stop" else signal.SIGKILL)
        if device_ops:
            device_allreduce(state.batch)
        if hvd.rank() == 0:
            change_hosts(state.batch, hvd.size())
        print("COMMIT", state.batch, hvd.size(), flush=True)
        state.batch += 1
        state.commit()
        time.sleep(pause)


train(state)
values = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
print("final", hvd.rank(), " ".join(repr(v) for v in values), flush=True)
if hvd.elastic.started_as_spare():
    print("promoted", hvd.rank(), flush=True)
hvd.shutdown()
