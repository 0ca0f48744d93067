"""An elastic training run for tests/integration/test_elastic.py:
    elastic_train.py MARKER VICTIM KILL_AT STEPS [kill|stop|raise] [SLEEP_S]
Rank VICTIM kills itself with SIGKILL (or stops itself with SIGSTOP: hvdrun
must notice the missing heartbeats; or raises an exception out of the
training function) right after step KILL_AT's update, once (MARKER records
that it did; VICTIM -1: nobody fails). ELASTIC_KILLS="R:S,R:S,..." in the
environment adds more: rank R kills itself after step S, once each (with
ELASTIC_KILLS_WAIT=1, once the spares wait, as a victim does below: ranks
killing themselves after the same step die together). With HOSTS_FILE in the environment
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
after step ELASTIC_KILL_SPARE_AT; a promoted spare prints "promoted RANK".
With ELASTIC_INIT_DELAY="S,S,...:SECONDS" the workers launched in those slots
(HVD_RANK) sleep that long before hvd.init() (faults while the others wait in
the first round).
With ELASTIC_BIND="S,S,...:ADDRESS" the workers launched in those slots listen
on ADDRESS (HVD_BIND_ADDRESS; 127.0.0.2 sorts after the others' 127.0.0.1, so
in gloo's pairs with them they are the connecting side).
With ELASTIC_REPLACEMENT_STOP=MARKER the first replacement (HVD_REPLACEMENT=1)
stops itself with SIGSTOP before hvd.init() (MARKER records that one did): a
starting worker that hangs, which hvdrun must give up and replace; with
ELASTIC_REPLACEMENT_SLEEP=MARKER it sleeps 600 s there instead (alive, slow).
With ELASTIC_FAULT_DIR=DIR (tests/multihost/chaos*.py) a worker faults itself
where a file DIR/NAME.arm says ("phase=P action=kill|stop who=W [delay=S]
[point=joined|connected]"), once job-wide: the first worker to match renames
it away and writes DIR/NAME.fired ("pid=.. slot=.. rank=.. t=<CLOCK_MONOTONIC>").
Phases: init (before hvd.init(), after `delay` s; who: slot:S for a first
worker, replacement, spare), round (the worker's next Join faults:
HVD_TEST_FAULT=<point>:<action>; who: slot:S before the first init, else
rank:R at a commit), commit (inside state.commit(): saved and reported, before
its host-update collective; who: rank:R), sync (inside the sync after a reset:
the root chosen, before the state's broadcast; who: rank:R).
With ELASTIC_END_FILE=FILE the run ends after the step FILE names (when it
exists and is below STEPS)."""

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


fault_dir = os.environ.get("ELASTIC_FAULT_DIR")


def armed_fault(phase, rank=None):
    """Claims and fires (or, for phase round, sets up) the fault armed in
    ELASTIC_FAULT_DIR for `phase` and this worker, if any (docstring)."""
    if not fault_dir:
        return
    me = {"replacement"} if os.environ.get("HVD_REPLACEMENT") == "1" else set()
    if os.environ.get("HVD_SPARE"):
        me.add("spare")
    elif not me and rank is None:
        me.add("slot:" + os.environ.get("HVD_RANK", "?"))
    if rank is not None:
        me = {f"rank:{rank}"}
    for name in sorted(n for n in os.listdir(fault_dir) if n.endswith(".arm")):
        path = os.path.join(fault_dir, name)
        try:
            with open(path) as f:
                arm = dict(kv.split("=", 1) for kv in f.read().split())
            if arm["phase"] != phase or arm["who"] not in me:
                continue
            os.rename(path, f"{path}.claimed.{os.getpid()}")
        except (OSError, ValueError, KeyError):
            continue  # being written, or claimed by another worker
        time.sleep(float(arm.get("delay", 0)))
        fired = os.path.join(fault_dir, name[:-4] + ".fired")
        with open(fired + ".tmp", "w") as f:
            f.write(f"pid={os.getpid()} slot={os.environ.get('HVD_RANK', '-')} "
                    f"spare={os.environ.get('HVD_SPARE', '-')} rank={rank} t={time.monotonic()}")
        os.replace(fired + ".tmp", fired)
        if phase == "round":
            os.environ["HVD_TEST_FAULT"] = f"{arm.get('point', 'joined')}:{arm['action']}"
        else:
            os.kill(os.getpid(), signal.SIGKILL if arm["action"] == "kill" else signal.SIGSTOP)
        return


armed_fault("init")
armed_fault("round")

init_delay = os.environ.get("ELASTIC_INIT_DELAY")
if init_delay:
    delayed, seconds = init_delay.split(":")
    if os.environ.get("HVD_RANK") in delayed.split(","):
        time.sleep(float(seconds))

bind = os.environ.get("ELASTIC_BIND")
if bind:
    bound, address = bind.split(":")
    if os.environ.get("HVD_RANK") in bound.split(",") and not os.environ.get("HVD_REPLACEMENT"):
        os.environ["HVD_BIND_ADDRESS"] = address

for hang in ("STOP", "SLEEP"):
    hang_marker = os.environ.get("ELASTIC_REPLACEMENT_" + hang)
    if hang_marker and os.environ.get("HVD_REPLACEMENT") == "1" and \
            not os.path.exists(hang_marker):
        open(hang_marker, "w").close()
        if hang == "STOP":
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            time.sleep(600)

hvd.init()
torch.manual_seed(7)
model = torch.nn.Linear(4, 1).double()
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                               named_parameters=model.named_parameters())
state = hvd.elastic.TorchState(model, opt, batch=0)
if fault_dir:  # faults inside commit and sync (ELASTIC_FAULT_DIR)
    plain_commit, plain_check, plain_sync_root = \
        state.commit, state.check_host_updates, state.sync_root
    in_commit = [False]

    def commit():
        in_commit[0] = True
        try:
            plain_commit()
        finally:
            in_commit[0] = False

    def check_host_updates():
        if in_commit[0]:
            armed_fault("commit", hvd.rank())
            armed_fault("round", hvd.rank())
        plain_check()

    def sync_root():
        root = plain_sync_root()
        armed_fault("sync", hvd.rank())
        return root

    state.commit, state.check_host_updates, state.sync_root = commit, check_host_updates, sync_root


def data(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 4, generator=g, dtype=torch.float64)
    return x, x.sum(dim=1, keepdim=True) * 0.5


kills = [tuple(map(int, k.split(":"))) for k in os.environ.get("ELASTIC_KILLS", "").split(",") if k]
device_ops = os.environ.get("ELASTIC_DEVICE_OPS") == "1"
device = []  # the process's device: its first local rank (the model stays there)


def device_allreduce(step):
    """A sum of (rank + 1) over the world, as a device op of this process's
    device (chosen once, as torch.cuda.set_device(hvd.local_rank()) at the
    start: a reset that renumbers the local ranks does not move the model);
    HorovodInternalError (hvd.elastic.run resets) when it fails."""
    import ctypes

    import numpy as np

    from hvd._collectives import enqueue
    from hvd._lib import C, make_op
    if not device:
        device.append(hvd.local_rank())
    a = np.full(4, hvd.rank() + 1, dtype=np.float32)
    dims = (ctypes.c_int64 * 1)(4)
    op = make_op(op_type=C.OPTYPE_ALLREDUCE, name=f"device.{step}".encode(), input=a.ctypes.data,
                 output=a.ctypes.data, shape=dims, ndim=1, dtype=C.FLOAT32,
                 device=device[0], reduce_op=C.OP_SUM)
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


end_file = os.environ.get("ELASTIC_END_FILE")


def last_step():
    """STEPS, or fewer when ELASTIC_END_FILE names an earlier end."""
    try:
        with open(end_file) as f:
            return min(steps, int(f.read()))
    except (TypeError, OSError, ValueError):
        return steps


@hvd.elastic.run
def train(state):
    while state.batch < last_step():
        if state.batch == last_step() - 1:
            wait_for_full_size(state)
        x, y = data(hvd.rank(), state.batch)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        for r, s in kills:
            if hvd.rank() == r and state.batch == s and not os.path.exists(f"{marker}.{r}.{s}"):
                if os.environ.get("ELASTIC_KILLS_WAIT") == "1":
                    wait_for_spares()
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
