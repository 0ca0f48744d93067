"""hvd.torch's calls take numpy arrays too: those go to hvd.numpy
(docs/python.md), as one declared rule rather than a test in every call."""

import functools
import inspect

import numpy as np

from hvd.common import handle_average_backwards_compatibility


def numpy_arrays_go_to(numpy_op):
    """Decorates an hvd.torch call: given a numpy array (a grouped call: a
    non-empty list of numpy arrays only), it runs ``numpy_op``, hvd.numpy's
    op, instead, with the call's arguments by name: ``average=`` folded into
    ``op=`` (Horovod's rule), ``compression=`` not applied. Tensors go to the
    decorated call."""
    def decorate(torch_op):
        signature = inspect.signature(torch_op)
        first = next(iter(signature.parameters))
        grouped = first == "tensors"
        rest = set(signature.parameters) - {first, "average", "compression"}
        assert rest <= set(inspect.signature(numpy_op).parameters), (torch_op, numpy_op)

        def on_numpy(args, kwargs):
            arguments = signature.bind(*args, **kwargs).arguments
            if "average" in signature.parameters:
                arguments["op"] = handle_average_backwards_compatibility(
                    arguments.pop("op", None), arguments.pop("average", None))
            arguments.pop("compression", None)
            return numpy_op(arguments.pop(first), **arguments)

        @functools.wraps(torch_op)
        def call(*args, **kwargs):
            x = args[0] if args else kwargs.get(first)
            if grouped:
                numpy = x and all(isinstance(a, np.ndarray) for a in x)
            else:
                numpy = isinstance(x, np.ndarray)
            return on_numpy(args, kwargs) if numpy else torch_op(*args, **kwargs)
        return call
    return decorate
