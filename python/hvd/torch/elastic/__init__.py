"""hvd.torch.elastic: horovod.torch.elastic's API (docs/elastic.md).

    import hvd.torch as hvd
    hvd.init()
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    train(state)
"""

from hvd.elastic import (HostUpdateResult, ObjectState, State, run_fn,  # noqa: F401
                         spares, started_as_spare)
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from hvd.torch.elastic.sampler import ElasticSampler  # noqa: F401
from hvd.torch.elastic.state import TorchState  # noqa: F401


def _reset():
    from hvd.torch import init, shutdown
    shutdown()
    init()


def run(func):
    """Runs ``func(state, ...)`` elastically (hvd.elastic.run_fn): after a
    failed collective every worker restores its last commit, rejoins the job
    in place (shutdown + init) and syncs from rank 0."""
    return run_fn(func, _reset)
