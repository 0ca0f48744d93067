"""TorchState: a model, an optimizer, an ElasticSampler and plain attributes
as one elastic state (horovod.torch.elastic.TorchState)."""

import copy

import torch

from hvd.common import rank
from hvd.elastic import ObjectState
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters


class StateHandler:
    """Saves, restores and syncs one value of a TorchState."""

    def __init__(self, value):
        self.value = value

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self, root=0):
        raise NotImplementedError()

    def set_value(self, value):
        self.value = value
        self.save()


class StateDictHandler(StateHandler):
    """A value with state_dict() / load_state_dict(): saved as a deep copy."""

    def __init__(self, value):
        super().__init__(value)
        self._saved = copy.deepcopy(value.state_dict())

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)


class ModelStateHandler(StateDictHandler):
    def sync(self, root=0):
        broadcast_parameters(self.value.state_dict(), root_rank=root)


class OptimizerStateHandler(StateDictHandler):
    def sync(self, root=0):
        broadcast_optimizer_state(self.value, root_rank=root)


class SamplerStateHandler(StateDictHandler):
    def sync(self, root=0):
        # As Horovod: rank 0's {epoch, processed_num} everywhere.
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), root_rank=root))


_HANDLERS = [
    (ElasticSampler, SamplerStateHandler),
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
]


def _split_handlers(kwargs):
    handlers, rest = {}, {}
    for name, value in kwargs.items():
        for kind, handler in _HANDLERS:
            if isinstance(value, kind):
                handlers[name] = handler(value)
                break
        else:
            rest[name] = value
    return handlers, rest


class TorchState(ObjectState):
    """``TorchState(model, optimizer, sampler=..., epoch=0, ...)``: models,
    optimizers and ElasticSamplers are saved as state dicts and synced with
    broadcast_parameters / broadcast_optimizer_state / rank 0's sampler
    state; other attributes as in ObjectState."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(dict(model=model, optimizer=optimizer))
        self._handlers, kwargs = _split_handlers(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        root = self.sync_root()
        for handler in self._handlers.values():
            handler.sync(root)
            if self._took_commit:
                handler.save()  # it holds that commit now: a restore returns to it
        self._sync_attrs(root)

    def __setattr__(self, name, value):
        if hasattr(self, "_handlers") and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)
