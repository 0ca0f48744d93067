"""Gradient compression for allreduce (Horovod's Compression.none / .fp16)."""

import abc

import torch


class Compressor(abc.ABC):
    """Compresses a tensor before allreduce and restores it afterwards."""

    @staticmethod
    @abc.abstractmethod
    def compress(tensor):
        """Returns (compressed tensor, context for decompress)."""

    @staticmethod
    @abc.abstractmethod
    def decompress(tensor, ctx):
        """Restores what compress() produced."""


class NoneCompressor(Compressor):
    """Leaves tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 (half the bytes); other
    dtypes unchanged."""

    @staticmethod
    def compress(tensor):
        compressed = tensor
        if tensor.dtype.is_floating_point:
            compressed = tensor.type(torch.float16)
        return compressed, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        dtype = ctx
        if dtype.is_floating_point:
            return tensor.type(dtype)
        return tensor


class Compression:
    """The available compressors."""

    none = NoneCompressor
    fp16 = FP16Compressor
