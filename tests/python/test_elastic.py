"""hvd.torch.elastic (horovod.torch.elastic's API) under hvdrun: states that
commit, restore and sync; run() recovering in place from a failed
collective (restore the last commit, shutdown + init, sync from rank 0) with
the same final parameters as a run without the failure; host updates;
ElasticSampler; the reset limit."""

import time

import pytest
import torch

import hvd.torch as hvd
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


def test_elastic_sampler_partitions_and_resumes():
    n, r = hvd.size(), hvd.rank()
    dataset = list(range(20))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
    mine = list(iter(sampler))
    assert len(mine) == len(sampler) == -(-20 // n)
    everyone = hvd.allgather_object(mine)
    assert set().union(*map(set, everyone)) == set(dataset)
    sampler.record_batch(0, 2)  # this rank processed its first two samples
    state = hvd.elastic.TorchState(sampler=sampler)
    state.commit()
    state.sync()  # the union of every rank's processed samples
    done = set().union(*[set(m[:2]) for m in everyone])
    assert sampler.processed_indices == done
    left = list(iter(sampler))
    assert not (set(left) & done)
    sampler.set_epoch(1)
    assert sampler.processed_indices == set() and sampler.epoch == 1
