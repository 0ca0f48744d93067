"""The framework protocol (hvd._collectives.framework) for torch tensors, and
the collectives bound to it (``collectives``), which hvd.torch's calls run.

CPU tensors run on the CPU transport; CUDA tensors are device ops (their
device index, ordered on the device's current stream) on the GPU transport
(HVD_GPU_TRANSPORT: nccl, or gloo staged through pinned host memory;
docs/gpu.md), their outputs allocated on the same device. Non-contiguous
tensors are copied.
"""

import torch

from hvd._collectives.framework import Framework
from hvd._collectives.ops import Collectives
from hvd._lib import C

_DTYPES = {
    torch.uint8: C.UINT8,
    torch.int8: C.INT8,
    torch.int16: C.INT16,
    torch.int32: C.INT32,
    torch.int64: C.INT64,
    torch.float16: C.FLOAT16,
    torch.bfloat16: C.BFLOAT16,
    torch.float32: C.FLOAT32,
    torch.float64: C.FLOAT64,
    torch.bool: C.BOOL,
}


def _cuda_stream(t):
    """The current CUDA stream of t's device (cudaStream_t as an int), for
    the op to be ordered on; None for CPU tensors, so CPU-only torch and
    torch 1.13 never touch torch.cuda."""
    if t.device.type != "cuda":
        return None
    return torch.cuda.current_stream(t.device).cuda_stream or None


def _ready_event(t):
    """(event, cudaEvent_t as an int) recorded now on t's current stream: the
    device's communication stream waits for it on the GPU, so the op starts
    as soon as t is ready and overlaps the compute queued after it (as
    torch's ProcessGroupNCCL does). (None, None) for CPU tensors; a torch
    without Event.cuda_event gives no pointer, and the engine then waits
    for the stream's work as of the op's batch."""
    if t.device.type != "cuda":
        return None, None
    event = torch.cuda.Event()
    event.record(torch.cuda.current_stream(t.device))
    return event, getattr(event, "cuda_event", None) or None


class TorchFramework(Framework):
    """The framework protocol for torch tensors (CPU and CUDA)."""

    def prepare(self, t):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"hvd.torch expects a torch.Tensor, not {type(t).__name__}")
        # Unsupported tensor types are ValueErrors, as in horovod.torch
        # ("Tensor type ... is not supported").
        if t.dtype not in _DTYPES:
            raise ValueError(f"Tensor type {t.dtype} is not supported by hvd; supported: "
                             + ", ".join(str(d) for d in _DTYPES))
        if t.layout != torch.strided:
            raise ValueError(f"hvd needs dense tensors, not {t.layout} "
                             "(sparse gradients: sparse_allreduce_async)")
        if t.device.type not in ("cpu", "cuda"):
            raise ValueError(f"Tensors on device {t.device} are not supported (CPU and CUDA "
                             "tensors only)")
        return t if t.is_contiguous() else t.contiguous()

    def info(self, t):
        device = t.device.index if t.device.type == "cuda" else C.DEVICE_CPU
        return t.data_ptr(), tuple(t.shape), _DTYPES[t.dtype], device

    def stream(self, t):
        return _cuda_stream(t)

    def ready_event(self, t):
        return _ready_event(t)

    def empty(self, shape, like):
        return torch.empty(shape, dtype=like.dtype, device=like.device)

    def wrap(self, buffer, shape, like):
        return torch.frombuffer(buffer, dtype=like.dtype).reshape(shape)

    def nbytes(self, t):
        return t.numel() * t.element_size()

    def element_size(self, t):
        return t.element_size()

    def copy_(self, dst, src):
        with torch.no_grad():
            dst.copy_(src)

    def int_array(self, values, like):
        return torch.tensor(values, dtype=torch.int32, device=like.device)

    def to_list(self, values):
        if isinstance(values, torch.Tensor):
            return values.reshape(-1).tolist()
        return list(values)


collectives = Collectives(TorchFramework())
