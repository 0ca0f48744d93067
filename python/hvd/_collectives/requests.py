"""One engine request per array: each ``prep_*`` checks the arguments (in
the order Horovod's binding does, so the same mistake raises the same error),
builds the hvd_op (by field name: _lib.make_op) over the framework's
prepared array, and says what the finished op returns (an enqueue.Prep).
"""

import ctypes
import numbers

from hvd import _checks, _lib
from hvd._collectives.enqueue import Prep, set_id
from hvd._collectives.outputs import in_place_result, read_output
from hvd._lib import C, make_op
from hvd.common import reduce_op_code

_int64_array_types = {}


def _shape_array(shape):
    n = len(shape)
    if n == 0:
        return None
    t = _int64_array_types.get(n)
    if t is None:
        t = _int64_array_types[n] = ctypes.c_int64 * n
    return t(*shape)


_name = _checks.tensor_name

_HOST_ORDER = {}  # host arrays: no stream, no event (make_op's NULL defaults)


def _ordering(fw, src, device):
    """make_op's stream and ready_event for a prepared array on `device`
    (recorded after prepare(), so a contiguous copy is included), and the
    event to keep alive."""
    if device == C.DEVICE_CPU:
        return _HOST_ORDER, None
    event, pointer = fw.ready_event(src)
    return {"stream": fw.stream(src), "ready_event": pointer}, event


def _waiter(fw, src, device):
    """For a device op: the stream its handle's wait orders after the op
    (the caller's current stream of the device then: hvd_wait_on_stream),
    as a function; None for a host op (waited for on the host)."""
    if device == C.DEVICE_CPU:
        return None
    return lambda: fw.stream(src)


def _output_like_input(fw, array, src, ptr, shape, inplace):
    """(output, its pointer, finish) of an op whose output has its input's
    shape: the input itself in place, else a new array."""
    if inplace:
        return src, ptr, in_place_result(fw, array, src)
    out = fw.empty(shape, src)
    return out, fw.info(out)[0], lambda hid: out


def prep_allreduce(fw, array, inplace, name, op, prescale_factor, postscale_factor,
                   process_set):
    if inplace:
        fw.check_writable(array)
    src = fw.prepare(array)
    ptr, shape, dtype, device = fw.info(src)
    out, out_ptr, finish = _output_like_input(fw, array, src, ptr, shape, inplace)
    dims = _shape_array(shape)
    order, event = _ordering(fw, src, device)
    o = make_op(op_type=C.OPTYPE_ALLREDUCE, name=_name(name), input=ptr, output=out_ptr,
                shape=dims, ndim=len(shape), dtype=dtype, device=device,
                reduce_op=reduce_op_code(op), prescale_factor=prescale_factor,
                postscale_factor=postscale_factor, process_set_id=set_id(process_set), **order)
    return Prep(o, (array, src, out, dims, event), finish, _waiter(fw, src, device))


def prep_broadcast(fw, array, inplace, root_rank, name, process_set):
    if inplace:
        fw.check_writable(array)
    src = fw.prepare(array)
    ptr, shape, dtype, device = fw.info(src)
    ps_id = set_id(process_set)
    root = process_set.set_rank_of(root_rank)
    out, out_ptr, finish = _output_like_input(fw, array, src, ptr, shape, inplace)
    dims = _shape_array(shape)
    order, event = _ordering(fw, src, device)
    o = make_op(op_type=C.OPTYPE_BROADCAST, name=_name(name), input=ptr, output=out_ptr,
                shape=dims, ndim=len(shape), dtype=dtype, device=device, root_rank=root,
                process_set_id=ps_id, **order)
    return Prep(o, (array, src, out, dims, event), finish, _waiter(fw, src, device))


def _rows_op(op_type, fw, array, name, process_set, reduce_op=None, prescale_factor=1.0,
             postscale_factor=1.0, splits=None):
    """The hvd_op of an op over rows whose output the engine allocates."""
    src = fw.prepare(array)
    ptr, shape, dtype, device = fw.info(src)
    if len(shape) == 0:
        raise ValueError("the tensor needs at least one dimension (rows), not a scalar")
    code = 0 if reduce_op is None else reduce_op_code(reduce_op)
    order, event = _ordering(fw, src, device)
    o = make_op(op_type=op_type, name=_name(name), input=ptr, shape=_shape_array(shape),
                ndim=len(shape), dtype=dtype, device=device, reduce_op=code,
                prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                splits=splits, process_set_id=set_id(process_set), **order)
    return o, (src, event), len(shape), _waiter(fw, src, device)


def prep_allgather(fw, array, name, process_set):
    o, (src, event), ndim, waiter = _rows_op(C.OPTYPE_ALLGATHER, fw, array, name, process_set)
    return Prep(o, (array, src, event), lambda hid: read_output(fw, hid, src, ndim), waiter)


def prep_reducescatter(fw, array, name, op, prescale_factor, postscale_factor, process_set):
    o, (src, event), ndim, waiter = _rows_op(C.OPTYPE_REDUCESCATTER, fw, array, name,
                                             process_set, op, prescale_factor, postscale_factor)
    return Prep(o, (array, src, event), lambda hid: read_output(fw, hid, src, ndim), waiter)


def prep_alltoall(fw, array, splits, name, process_set):
    """Its result: (the received rows, the received splits as an int32
    array on the input's device)."""
    n = process_set.size()
    splits_array = None
    if splits is not None:
        values = split_values(fw.to_list(splits))
        if len(values) != n:
            raise ValueError(f"alltoall: splits has {len(values)} entries; the process set has "
                             f"{n} ranks")
        if any(v < 0 for v in values):
            raise ValueError(f"alltoall: splits {values} has negative entries")
        splits_array = (ctypes.c_int64 * n)(*values)
    o, (src, event), ndim, waiter = _rows_op(C.OPTYPE_ALLTOALL, fw, array, name, process_set,
                                             splits=splits_array)

    def finish(hid):
        out = read_output(fw, hid, src, ndim)
        received = (ctypes.c_int64 * n)()
        _lib.check(_lib.hvd_handle_received_splits(hid, received, n), "received splits")
        return out, fw.int_array(list(received), array)
    return Prep(o, (array, src, splits_array, event), finish, waiter)


def split_values(values):
    """alltoall splits as ints; ValueError (as Horovod) for anything that is
    not an integer (float or bool splits)."""
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"alltoall: splits must be integers (int32), not "
                             f"{type(v).__name__} ({v!r})")
        out.append(int(v))
    return out


def prep_control(op_type, process_set, finish):
    """An op without data (barrier, join) on ``process_set``."""
    return Prep(make_op(op_type=op_type, process_set_id=set_id(process_set)), None, finish)
