"""hvd.torch.elastic (horovod.torch.elastic's API) under hvdrun: states that
commit, restore and sync; run() recovering in place from a failed
collective (restore the last commit, shutdown + init, sync from the lowest
rank holding the highest commit, which every rank then holds) with
the same final parameters as a run without the failure; host updates;
ElasticSampler (Horovod's: partitions at sizes 1 to 4, resuming at a new
size, a partial epoch committed then restored across a real reset, synced
from rank 0); the reset limit."""

import random
import time

import pytest
import torch

import hvd.torch as hvd
import hvd.torch.elastic.sampler as sampler_module
from hvd.elastic import HostUpdateResult

STEPS = 6


def data(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 4, generator=g, dtype=torch.float64)
    return x, x.sum(dim=1, keepdim=True) * 0.5


def fresh_model():
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 1).double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   named_parameters=model.named_parameters())
    return model, opt


def step(model, opt, batch):
    x, y = data(hvd.rank(), batch)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def fail_collective():
    """A collective that fails on every rank (shapes differ): HorovodInternalError."""
    hvd.allreduce(torch.ones(hvd.rank() + 1), name="elastic.injected")


def test_run_recovers_in_place_from_a_failed_collective():
    model, opt = fresh_model()
    for b in range(STEPS):
        step(model, opt, b)
    reference = [p.detach().clone() for p in model.parameters()]

    model, opt = fresh_model()
    state = hvd.elastic.TorchState(model, opt, batch=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])
    injected = {"at": None}
    recovery = {}

    @hvd.elastic.run
    def train(state):
        while state.batch < STEPS:
            step(model, opt, state.batch)
            if "failed" in recovery and "back" not in recovery:
                recovery["back"] = time.monotonic() - recovery["failed"]
            if state.batch == 3 and injected["at"] is None:
                injected["at"] = state.batch  # after the update, before the commit
                recovery["failed"] = time.monotonic()
                fail_collective()
            state.batch += 1
            state.commit()
        return state.batch

    assert train(state) == STEPS
    assert resets == [hvd.size()]  # one reset, same world
    for got, want in zip(model.parameters(), reference):
        assert torch.equal(got.detach(), want), (got, want)
    print(f"rank {hvd.rank()}: failed collective to the next completed step: "
          f"{recovery['back'] * 1000:.1f} ms")


def test_object_state_commit_restore_sync():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, epoch=0, note="x")
    state.epoch = 5
    state.restore()
    assert state.epoch == 0  # nothing committed yet
    state.epoch = 2 + hvd.rank()
    state.commit()
    state.epoch = 99
    state.restore()
    assert state.epoch == 2 + hvd.rank()
    state.sync()  # rank 0's committed values everywhere
    assert state.epoch == 2 and state.note == "x"


def test_sync_takes_the_highest_commit_and_every_rank_then_holds_it():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, owner=hvd.rank())
    state.commit()  # commit 1 on every rank
    assert state._commit == 1
    # As after a failure where the last rank got one commit further than the
    # others before they failed: the sync takes its state, and its number.
    last = hvd.size() - 1
    if hvd.rank() == last:
        state._commit += 1
    state.sync()
    assert state.owner == last and state._commit == 2
    state.commit()
    assert state._commit == 3  # every rank counts on from there


def test_a_torch_state_restores_the_commit_its_sync_took():
    # Rank 0 holds commit 4; the others are new (as replacements): after the
    # sync they hold rank 0's commit, and a restore returns to it, not to
    # their own first values.
    model, opt = fresh_model()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float(hvd.rank()))
    state = hvd.elastic.TorchState(model, opt, batch=0)
    if hvd.rank() == 0:
        state._commit = 4
    state.sync()
    assert state._commit == 4
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(99.0)
    state.restore()
    assert all(bool((p == 0).all()) for p in model.parameters())


def test_hosts_updated_interrupt_resets_without_restore():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, counter=0)
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(state.counter)
        state.counter += 1
        if len(calls) == 1:
            state.on_hosts_updated(time.time(), HostUpdateResult.added)
        state.commit()  # raises HostsUpdatedInterrupt the first time, on every rank
        return state.counter

    assert train(state) == 2  # the interrupted attempt's commit is kept
    assert calls == [0, 1]


def test_host_update_seen_by_rank_0_only_interrupts_every_rank():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, n=0)
    if hvd.rank() == 0:
        state.on_hosts_updated(1.0, HostUpdateResult.removed)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as e:
        state.commit()
    assert e.value.skip_sync  # only removals: the survivors' state is already in sync
    state.commit()  # nothing new since


def test_reset_limit_stops_a_failure_that_recurs_before_any_progress(monkeypatch):
    monkeypatch.setenv("HVD_RESET_LIMIT", "3")
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, n=0)
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append(1)
        fail_collective()

    with pytest.raises(hvd.HorovodInternalError):
        train(state)
    assert len(attempts) == 3
    # hvd is usable after it.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


def horovod_order(n, seed, epoch, shuffle=True):
    """Horovod's order of a dataset of n samples in an epoch."""
    order = list(range(n))
    if shuffle:
        random.Random(seed + epoch).shuffle(order)
    return order


def in_world(monkeypatch, world_rank, world_size):
    """The sampler sees this rank and size (a world it is reset into)."""
    monkeypatch.setattr(sampler_module, "rank", lambda: world_rank)
    monkeypatch.setattr(sampler_module, "size", lambda: world_size)


@pytest.mark.parametrize("n,world,shuffle", [(20, 1, True), (20, 2, True), (20, 3, True),
                                             (7, 3, False), (2, 3, True), (0, 2, True)])
def test_elastic_sampler_partitions_as_horovod(monkeypatch, n, world, shuffle):
    order = horovod_order(n, 5, 2, shuffle)
    per_rank = -(-n // world)
    padded = (order * (world + 1))[:per_rank * world] if order else []
    for r in range(world):
        in_world(monkeypatch, r, world)
        s = hvd.elastic.ElasticSampler(list(range(n)), shuffle=shuffle, seed=5)
        s.set_epoch(2)
        assert list(iter(s)) == padded[r::world] and len(s) == per_rank
        assert list(iter(s)) == padded[r::world]  # again: the same, without set_epoch
        assert s.state_dict() == {"epoch": 2, "processed_num": 0}


def test_elastic_sampler_resumes_at_a_new_size_without_repeating_or_losing(monkeypatch):
    # 3 ranks process 2 batches of 2, then the world shrinks to 2 and grows
    # to 4: every later world gets exactly what is left, in Horovod's order.
    dataset = list(range(30))
    order = horovod_order(30, 9, 0)
    samplers = []
    for r in range(3):
        in_world(monkeypatch, r, 3)
        samplers.append(hvd.elastic.ElasticSampler(dataset, seed=9))
    for s in samplers:
        s.record_batch(0, 2)
        s.record_batch(1, 2)
    assert {s.processed_num for s in samplers} == {12}  # 2 batches x 2 x 3 ranks
    state = samplers[0].state_dict()
    for new_size in (2, 4, 1):
        seen = []
        for r in range(new_size):
            in_world(monkeypatch, r, new_size)
            s = hvd.elastic.ElasticSampler(dataset, seed=9)
            s.load_state_dict(state)  # what TorchState's sync hands a worker
            mine = list(iter(s))
            assert len(mine) == len(s) == -(-18 // new_size)
            seen += mine
        assert set(seen) == set(order[12:]), new_size  # nothing lost
        assert not set(seen) & set(order[:12])          # nothing repeated
    in_world(monkeypatch, 0, 2)
    s = hvd.elastic.ElasticSampler(dataset, seed=9)
    s.load_state_dict(state)
    s.set_epoch(1)
    assert s.processed_num == 0 and s.epoch == 1
    assert list(iter(s)) == horovod_order(30, 9, 1)[0::2]


def test_elastic_sampler_across_a_reset_restores_the_committed_partial_epoch():
    # A real reset (a failed collective, hvd.elastic.run recovering in place)
    # after a partial epoch: the sampler goes back to the last commit and
    # the rest of the epoch is what Horovod's order leaves after it.
    n, r = hvd.size(), hvd.rank()
    dataset = list(range(40))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
    everyone = hvd.allgather_object(list(iter(sampler)))
    assert set().union(*map(set, everyone)) == set(dataset)
    state = hvd.elastic.TorchState(sampler=sampler)
    seen_after_reset = []
    injected = {"done": False}

    @hvd.elastic.run
    def train(state):
        for idx, _ in enumerate(sampler):
            if injected["done"]:
                seen_after_reset.append(_)
                continue
            sampler.record_batch(idx, 1)
            if idx == 2:
                state.commit()  # 3 batches of 1 on every rank: 3 * n processed
            if idx == 4:
                injected["done"] = True
                fail_collective()  # 2 more recorded, then the reset drops them

    train(state)
    assert sampler.processed_num == 3 * n
    order = horovod_order(40, 3, 0)
    left = order[3 * n:]
    per_rank = -(-len(left) // n)
    assert seen_after_reset == (left * 2)[:per_rank * n][r::n]
    everything = hvd.allgather_object(seen_after_reset)
    assert set().union(*map(set, everything)) == set(left)


def test_torch_state_syncs_the_sampler_from_rank_0():
    sampler = hvd.elastic.ElasticSampler(list(range(16)), seed=1)
    sampler.record_batch(0, 1 + hvd.rank())  # the ranks disagree
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()
    assert sampler.state_dict() == {"epoch": 0, "processed_num": hvd.size()}  # rank 0's
    state.commit()
    sampler.record_batch(1, 1)
    state.restore()  # back to the commit
    assert sampler.processed_num == hvd.size()
