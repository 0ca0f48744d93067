"""ElasticSampler (horovod.torch.elastic.ElasticSampler), exactly as
Horovod's: it orders every index of the dataset (shuffled with
``seed + epoch`` when ``shuffle``) and counts in ``processed_num`` the samples
the whole job processed this epoch (``record_batch`` adds ``batch_size``
times the number of ranks). What is left is that order past the first
``processed_num``; each rank takes every size-th of it from its rank on,
padded by repeating the first ones so that every rank gets
ceil(left / size) (Horovod pads once and fails when fewer samples are left
than ranks minus one; this pads until even). After a reset at a new size the rest is partitioned over
the new world: nothing processed is repeated, nothing is lost. Its state is
``{epoch, processed_num}``; TorchState saves, restores and syncs it (rank
0's)."""

import math
import random

import torch

from hvd.common import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions what is left of the epoch over the current world.

    ``record_batch(batch_idx, batch_size)`` after each batch of this epoch
    (every rank does, for the same batches); ``set_epoch(e)`` at the start
    of an epoch. Iterating again without ``set_epoch`` yields the same
    remaining samples."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: nothing processed yet."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """One batch of ``batch_size`` processed on every rank."""
        self.processed_num += batch_size * self.num_replicas

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def state_dict(self):
        return dict(epoch=self.epoch, processed_num=self.processed_num)

    def reset(self):
        """Re-partitions what is left of the epoch over the current world."""
        self.num_replicas = size()
        self.rank = rank()
        all_indices = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(all_indices)
        self.remaining_indices = all_indices[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = self.remaining_indices[:]
        while indices and len(indices) < self.total_size:  # evenly divisible
            indices += indices[:(self.total_size - len(indices))]
        self.indices = indices[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
