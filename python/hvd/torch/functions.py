"""Helpers that start every rank from the same state (horovod/torch/functions.py):
broadcast_parameters, broadcast_optimizer_state, broadcast_object,
allgather_object."""

import collections
import io

import torch

from hvd.common import global_process_set
from hvd.torch.mpi_ops import allgather, broadcast_, broadcast_async_, synchronize

try:  # cloudpickle serializes more (lambdas, local classes); plain pickle otherwise
    import cloudpickle as _pickle
except ImportError:
    import pickle as _pickle


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Broadcasts parameters or buffers from ``root_rank`` (in place).

    ``params``: ``model.state_dict()``, ``model.named_parameters()`` or
    ``model.parameters()`` (a dict, or a sequence of tensors or of
    (name, tensor) pairs)."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, (list, tuple)) or hasattr(params, "__iter__"):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"invalid params of type: {type(params)}")

    handles = [broadcast_async_(p, root_rank, name, process_set) for name, p in params]
    for handle in handles:
        synchronize(handle)


def _is_scalar_option(value):
    if isinstance(value, (bool, int, float)):
        return True
    return (isinstance(value, (tuple, list)) and len(value) > 0
            and all(isinstance(v, (bool, int, float)) for v in value))


def broadcast_optimizer_state(optimizer, root_rank, process_set=global_process_set):
    """Broadcasts an optimizer's state (its per-parameter tensors and scalars,
    and numeric options such as the learning rate) from ``root_rank``."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")

    state_dict = optimizer.state_dict()

    # A new optimizer has no state yet: make it by a step with zero gradients.
    if len(state_dict["state"]) == 0:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad and id(p) not in state_dict["state"]:
                    p.grad = p.data.new(p.size()).zero_()
        # A DistributedOptimizer's step() would allreduce: call the wrapped
        # optimizer's own step.
        if getattr(optimizer, "_hvd_distributed", False):
            super(optimizer.__class__, optimizer).step()
        else:
            optimizer.step()
        state_dict = optimizer.state_dict()

    if len(state_dict["state"]) == 0:
        return  # a stateless optimizer

    params = []
    callbacks = {}
    occurrences = collections.defaultdict(int)

    def _option_callback(index, key, tensor, kind):
        def _from_tensor():
            values = tensor.tolist()
            if isinstance(kind, tuple):
                container, types = kind
                value = container(t(v) for t, v in zip(types, values))
            else:
                value = kind(values[0])
            optimizer.param_groups[index][key] = value
        return _from_tensor

    def _state_callback(pid, name, tensor, kind):
        def _from_tensor():
            state_dict["state"][pid][name] = kind(tensor.tolist()[0])
        return _from_tensor

    for index, group in enumerate(state_dict["param_groups"]):
        # Options like the learning rate: numbers (or tuples of numbers) wrapped in tensors.
        for key, value in sorted(group.items()):
            if key == "params" or not _is_scalar_option(value):
                continue
            name = f"option.{key}.{index}"
            if isinstance(value, (tuple, list)):
                tensor = torch.tensor([float(v) for v in value], dtype=torch.float64)
                kind = (type(value), [type(v) for v in value])
            else:
                tensor = torch.tensor([float(value)], dtype=torch.float64)
                kind = type(value)
            callbacks[name] = _option_callback(index, key, tensor, kind)
            params.append((name, tensor))

        for pid in group["params"]:
            if pid not in state_dict["state"]:
                continue  # a parameter without gradient has no state
            for name, p in state_dict["state"][pid].items():
                occurrences[name] += 1
                key = f"state.{name}.{occurrences[name]}"
                if not torch.is_tensor(p):
                    if not isinstance(p, (bool, int, float)):
                        continue
                    kind = type(p)
                    p = torch.tensor([float(p)], dtype=torch.float64)
                    callbacks[key] = _state_callback(pid, name, p, kind)
                params.append((key, p))

    broadcast_parameters(params, root_rank, process_set)

    for key, _ in params:
        if key in callbacks:
            callbacks[key]()


def _to_bytes_tensor(obj):
    buf = io.BytesIO()
    _pickle.dump(obj, buf)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns ``root_rank``'s ``obj`` (any picklable object) on every rank."""
    if name is None:
        name = type(obj).__name__
    root_in_set = process_set.set_rank_of(root_rank)
    if process_set.rank() == root_in_set:
        t = _to_bytes_tensor(obj)
        size = torch.tensor([t.numel()], dtype=torch.int64)
        broadcast_(size, root_rank, name + ".sz", process_set)
    else:
        size = torch.tensor([0], dtype=torch.int64)
        broadcast_(size, root_rank, name + ".sz", process_set)
        t = torch.empty(int(size.item()), dtype=torch.uint8)
    broadcast_(t, root_rank, name + ".t", process_set)
    if process_set.rank() != root_in_set:
        obj = _pickle.loads(t.numpy().tobytes())
    return obj


def allgather_object(obj, name=None, process_set=global_process_set):
    """A list of every rank's ``obj`` (any picklable object), in rank order."""
    if name is None:
        name = type(obj).__name__
    t = _to_bytes_tensor(obj)
    sizes = allgather(torch.tensor([t.numel()], dtype=torch.int64), name=name + ".sz",
                      process_set=process_set).tolist()
    gathered = allgather(t, name=name + ".t", process_set=process_set).numpy()
    out, start = [], 0
    for s in sizes:
        out.append(_pickle.loads(gathered[start:start + s].tobytes()))
        start += s
    return out
