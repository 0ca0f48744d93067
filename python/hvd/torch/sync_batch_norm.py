"""SyncBatchNorm: batch normalization with statistics over the whole
distributed batch (every rank of the process set).

Written with ordinary torch operations and the autograd-aware allreduce, so
it runs on CPU tensors (Horovod's uses CUDA-only kernels) and its backward
pass is autograd's: the gradients of the shared mean and variance are summed
over the ranks by allreduce's backward.
"""

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.common import Sum, global_process_set
from hvd.torch.mpi_ops import allreduce


class SyncBatchNorm(_BatchNorm):
    """Drop-in for torch.nn.BatchNorm{1,2,3}d: in training, the mean and
    variance are those of the batch of every rank together."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _run_bn(self, input, exponential_average_factor):
        return torch.nn.functional.batch_norm(
            input, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, exponential_average_factor, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        if not self.training and self.track_running_stats:
            return self._run_bn(input, factor)
        if self.process_set.size() == 1:
            return self._run_bn(input, factor)
        return self._sync_bn(input, factor)

    def _sync_bn(self, input, factor):
        c = input.shape[1]
        reduce_dims = [0] + list(range(2, input.dim()))
        local_count = input.numel() // c
        # Sum over the ranks of [count, sum per channel]; then of the squared deviations.
        stats = torch.cat([input.new_full((1,), float(local_count)),
                           input.sum(dim=reduce_dims)])
        stats = allreduce(stats, op=Sum, name=None, process_set=self.process_set)
        count = stats[0]
        mean = stats[1:] / count
        shape = [1, c] + [1] * (input.dim() - 2)
        centered = input - mean.view(shape)
        sq = allreduce(centered.pow(2).sum(dim=reduce_dims), op=Sum,
                       process_set=self.process_set)
        var = sq / count
        out = centered * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)

        if self.track_running_stats:
            with torch.no_grad():
                n = float(count.item())
                unbiased = var.detach() * (n / max(n - 1.0, 1.0))
                self.running_mean.mul_(1.0 - factor).add_(mean.detach(), alpha=factor)
                self.running_var.mul_(1.0 - factor).add_(unbiased, alpha=factor)
        return out
