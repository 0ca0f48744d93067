"""The framework protocol: what a collective needs from an array framework.

hvd's collectives (hvd._collectives.ops) are written once, over this
protocol; hvd.torch implements it for torch tensors
(hvd.torch._framework.TorchFramework), hvd.numpy for numpy arrays
(hvd._numpy_framework.NumpyFramework). An "array" below is a value of the framework's
own array type; a "prepared" array is what prepare() returned for it.
"""

import abc


class Framework(abc.ABC):
    """An array framework as the collectives see it. Subclasses implement
    every abstract method; host-only frameworks keep the defaults of stream(),
    ready_event() and check_writable()."""

    @abc.abstractmethod
    def prepare(self, x):
        """``x`` itself, or a contiguous copy the engine can read as one
        buffer. TypeError for what is no array of this framework; TypeError
        or ValueError (as the framework's Horovod binding raises) for a
        dtype, layout or device the engine cannot take."""

    @abc.abstractmethod
    def info(self, x):
        """(data pointer, shape tuple, HVD dtype code, HVD device) of a
        prepared array; the device is C.DEVICE_CPU for host memory, else the
        CUDA device index."""

    def stream(self, x):
        """The CUDA stream (cudaStream_t as an int) the op on a prepared
        array is ordered on; None for host memory."""
        return None

    def ready_event(self, x):
        """(event, cudaEvent_t as an int): an event recorded now on
        stream(x), for the device's communication stream to wait on (the
        event object is kept alive until the op completes); (None, None) for
        host memory."""
        return None, None

    def check_writable(self, x):
        """ValueError when an in-place op may not write into ``x``."""

    @abc.abstractmethod
    def empty(self, shape, like):
        """A new contiguous array of ``shape`` with like's dtype and device."""

    @abc.abstractmethod
    def wrap(self, buffer, shape, like):
        """An array of like's dtype and ``shape`` over a writable host buffer
        object, without copying; it keeps the buffer alive."""

    @abc.abstractmethod
    def nbytes(self, x):
        """The size of a prepared array in bytes."""

    @abc.abstractmethod
    def element_size(self, x):
        """Bytes per element of an array."""

    @abc.abstractmethod
    def copy_(self, dst, src):
        """Copies ``src`` into ``dst`` (which may be non-contiguous)."""

    @abc.abstractmethod
    def int_array(self, values, like):
        """An int32 array of the ints ``values`` on like's device (alltoall's
        received splits, where Horovod puts them)."""

    @abc.abstractmethod
    def to_list(self, values):
        """A list of the values of a sequence or an array (alltoall's splits)."""
