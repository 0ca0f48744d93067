"""hvd.torch: distributed PyTorch, mirroring horovod.torch.

    import hvd.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Collectives: mpi_ops; DistributedOptimizer: optimizer; broadcast_parameters,
broadcast_optimizer_state, broadcast_object, allgather_object: functions;
SyncBatchNorm: sync_batch_norm; Compression: compression. The rest (init,
rank, size, process sets, ops, build queries, timeline) is hvd.common.
"""

from hvd.common import (  # noqa: F401
    init, shutdown, is_initialized, size, rank, local_size, local_rank, cross_size, cross_rank,
    is_homogeneous, mpi_built, mpi_enabled, mpi_threads_supported, gloo_built, gloo_enabled,
    nccl_built, ddl_built, ccl_built, cuda_built, rocm_built, start_timeline, stop_timeline,
    Sum, Average, Min, Max, Product, Adasum, ReduceOp, ProcessSet, global_process_set,
    add_process_set, remove_process_set, HorovodInternalError, HostsUpdatedInterrupt, Handle,
    __version__)
from hvd.torch.compression import Compression  # noqa: F401
from hvd.torch.mpi_ops import (  # noqa: F401
    allreduce, allreduce_async, allreduce_, allreduce_async_,
    grouped_allreduce, grouped_allreduce_async, grouped_allreduce_, grouped_allreduce_async_,
    sparse_allreduce_async,
    allgather, allgather_async, grouped_allgather, grouped_allgather_async,
    broadcast, broadcast_async, broadcast_, broadcast_async_,
    alltoall, alltoall_async,
    reducescatter, reducescatter_async, grouped_reducescatter, grouped_reducescatter_async,
    barrier, join, poll, synchronize)
from hvd.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from hvd.torch.optimizer import DistributedOptimizer  # noqa: F401
from hvd.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
from hvd.torch import elastic  # noqa: F401,E402  (hvd.elastic.run, TorchState, ...)
