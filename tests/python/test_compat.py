"""The Horovod compatibility shim (python/compat): an unchanged Horovod
script's imports resolve to hvd, only when the compat folder is on the path."""

import os
import subprocess
import sys

import torch

COMPAT = os.path.join(os.path.dirname(__file__), "..", "..", "python", "compat")


def test_not_on_the_path_without_the_switch():
    # Without the compat folder on the path, `horovod` is a real Horovod or nothing.
    env = {k: v for k, v in os.environ.items() if k not in ("HVD_RANK", "HVD_SIZE")}
    code = ("import importlib.util; s = importlib.util.find_spec('horovod'); "
            "print(s.origin if s else '')")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert os.path.realpath(COMPAT) not in os.path.realpath(out or "/")


def test_horovod_script_runs_on_hvd():
    sys.path.insert(0, os.path.abspath(COMPAT))
    try:
        import horovod.torch as hvd
        from horovod.common.exceptions import HorovodInternalError
        from horovod.torch.mpi_ops import allreduce_async  # noqa: F401
        import hvd.torch as native
    finally:
        sys.path.pop(0)
    assert hvd.allreduce is native.allreduce
    assert HorovodInternalError is native.HorovodInternalError
    hvd.init()
    model = torch.nn.Linear(2, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    model(torch.ones(3, 2)).sum().backward()
    opt.step()
    out = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum)
    assert out.item() == sum(range(hvd.size()))
