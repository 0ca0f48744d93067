"""The collectives, written once over a Framework (hvd._collectives.framework).

``Collectives(framework)`` binds them to one framework: hvd.numpy exports
its methods as they are; hvd.torch calls them under Horovod's signatures,
compression and autograd (hvd/torch/). The naming is Horovod's: ``op``
blocks and returns a new array; ``op_`` works in place; ``op_async`` and
``op_async_`` return a Handle for poll() / synchronize(). Reductions default
to Average; ``root_rank`` is a global rank, also on process sets. Arrays
are kept alive until their op is done.

barrier() and join() carry no data: they are plain functions, the same for
every framework.
"""

from hvd._checks import member_name
from hvd._collectives import requests
from hvd._collectives.enqueue import submit, submit_group
from hvd._collectives.outputs import join_result
from hvd._lib import C
from hvd.common import Average, global_process_set


class Collectives:
    """The collectives over arrays of one framework."""

    def __init__(self, framework):
        self.framework = framework

    # ---- allreduce ------------------------------------------------------------

    def allreduce_async(self, array, op=Average, name=None, prescale_factor=1.0,
                        postscale_factor=1.0, process_set=global_process_set):
        """Starts an allreduce into a new array; synchronize() returns it."""
        return self._allreduce(array, False, op, name, prescale_factor, postscale_factor,
                               process_set)

    def allreduce(self, array, op=Average, name=None, prescale_factor=1.0,
                  postscale_factor=1.0, process_set=global_process_set):
        """The reduction of ``array`` over the ranks of the set, as a new array."""
        return self.allreduce_async(array, op, name, prescale_factor, postscale_factor,
                                    process_set).wait()

    def allreduce_async_(self, array, op=Average, name=None, prescale_factor=1.0,
                         postscale_factor=1.0, process_set=global_process_set):
        """Starts an in-place allreduce; synchronize() returns ``array``."""
        return self._allreduce(array, True, op, name, prescale_factor, postscale_factor,
                               process_set)

    def allreduce_(self, array, op=Average, name=None, prescale_factor=1.0,
                   postscale_factor=1.0, process_set=global_process_set):
        """In place: ``array`` receives the reduction."""
        return self.allreduce_async_(array, op, name, prescale_factor, postscale_factor,
                                     process_set).wait()

    def _allreduce(self, array, inplace, op, name, prescale_factor, postscale_factor,
                   process_set):
        return submit(requests.prep_allreduce(self.framework, array, inplace, name, op,
                                              prescale_factor, postscale_factor, process_set),
                      "allreduce")

    def grouped_allreduce_async(self, arrays, op=Average, name=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
        """Starts one allreduce of several arrays, negotiated and completed
        together; synchronize() returns the list of new arrays."""
        return self._grouped_allreduce(arrays, False, op, name, prescale_factor,
                                       postscale_factor, process_set)

    def grouped_allreduce(self, arrays, op=Average, name=None, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set):
        """Allreduce of several arrays as one negotiated group."""
        return self.grouped_allreduce_async(arrays, op, name, prescale_factor,
                                            postscale_factor, process_set).wait()

    def grouped_allreduce_async_(self, arrays, op=Average, name=None, prescale_factor=1.0,
                                 postscale_factor=1.0, process_set=global_process_set):
        """Starts an in-place grouped allreduce; synchronize() returns the arrays."""
        return self._grouped_allreduce(arrays, True, op, name, prescale_factor,
                                       postscale_factor, process_set)

    def _grouped_allreduce(self, arrays, inplace, op, name, prescale_factor, postscale_factor,
                           process_set):
        preps = [requests.prep_allreduce(self.framework, a, inplace, member_name(name, i), op,
                                         prescale_factor, postscale_factor, process_set)
                 for i, a in enumerate(arrays)]
        return submit_group(preps, "grouped_allreduce")

    # ---- allgather ------------------------------------------------------------

    def allgather_async(self, array, name=None, process_set=global_process_set):
        """Starts an allgather; synchronize() returns the concatenation."""
        return submit(requests.prep_allgather(self.framework, array, name, process_set),
                      "allgather")

    def allgather(self, array, name=None, process_set=global_process_set):
        """The arrays of every rank concatenated along the first dimension (which
        may differ between ranks), in rank order."""
        return self.allgather_async(array, name, process_set).wait()

    def grouped_allgather_async(self, arrays, name=None, process_set=global_process_set):
        """Starts one allgather of several arrays, negotiated together."""
        preps = [requests.prep_allgather(self.framework, a, member_name(name, i), process_set)
                 for i, a in enumerate(arrays)]
        return submit_group(preps, "grouped_allgather")

    def grouped_allgather(self, arrays, name=None, process_set=global_process_set):
        """Allgather of several arrays as one negotiated group."""
        return self.grouped_allgather_async(arrays, name, process_set).wait()

    # ---- broadcast ------------------------------------------------------------

    def broadcast_async(self, array, root_rank, name=None, process_set=global_process_set):
        """Starts a broadcast into a new array; synchronize() returns it."""
        return self._broadcast(array, False, root_rank, name, process_set)

    def broadcast(self, array, root_rank, name=None, process_set=global_process_set):
        """``root_rank``'s array (a global rank), as a new array on every rank."""
        return self.broadcast_async(array, root_rank, name, process_set).wait()

    def broadcast_async_(self, array, root_rank, name=None, process_set=global_process_set):
        """Starts an in-place broadcast; synchronize() returns ``array``."""
        return self._broadcast(array, True, root_rank, name, process_set)

    def broadcast_(self, array, root_rank, name=None, process_set=global_process_set):
        """In place: ``array`` receives ``root_rank``'s values."""
        return self.broadcast_async_(array, root_rank, name, process_set).wait()

    def _broadcast(self, array, inplace, root_rank, name, process_set):
        return submit(requests.prep_broadcast(self.framework, array, inplace, root_rank, name,
                                              process_set), "broadcast")

    # ---- alltoall -------------------------------------------------------------

    def alltoall_async(self, array, splits=None, name=None, process_set=global_process_set):
        """Starts an alltoall; synchronize() returns (rows, received_splits)."""
        return submit(requests.prep_alltoall(self.framework, array, splits, name, process_set),
                      "alltoall")

    def alltoall(self, array, splits=None, name=None, process_set=global_process_set):
        """Sends splits[i] rows (even parts without splits) to rank i of the set.
        Returns the received rows; with ``splits``, (rows, received_splits)."""
        out, received = self.alltoall_async(array, splits, name, process_set).wait()
        return out if splits is None else (out, received)

    # ---- reducescatter --------------------------------------------------------

    def reducescatter_async(self, array, op=Average, name=None, process_set=global_process_set,
                            prescale_factor=1.0, postscale_factor=1.0):
        """Starts a reducescatter; synchronize() returns this rank's part."""
        return submit(requests.prep_reducescatter(self.framework, array, name, op,
                                                  prescale_factor, postscale_factor,
                                                  process_set), "reducescatter")

    def reducescatter(self, array, op=Average, name=None, process_set=global_process_set,
                      prescale_factor=1.0, postscale_factor=1.0):
        """Reduces over the ranks and gives rank i its part of the first
        dimension (the first rows % size ranks get one row more)."""
        return self.reducescatter_async(array, op, name, process_set, prescale_factor,
                                        postscale_factor).wait()

    def grouped_reducescatter_async(self, arrays, op=Average, name=None,
                                    process_set=global_process_set, prescale_factor=1.0,
                                    postscale_factor=1.0):
        """Starts one reducescatter of several arrays, negotiated together."""
        preps = [requests.prep_reducescatter(self.framework, a, member_name(name, i), op,
                                             prescale_factor, postscale_factor, process_set)
                 for i, a in enumerate(arrays)]
        return submit_group(preps, "grouped_reducescatter")

    def grouped_reducescatter(self, arrays, op=Average, name=None,
                              process_set=global_process_set, prescale_factor=1.0,
                              postscale_factor=1.0):
        """Reducescatter of several arrays as one negotiated group."""
        return self.grouped_reducescatter_async(arrays, op, name, process_set, prescale_factor,
                                                postscale_factor).wait()


# ---- barrier, join: no data, no framework ------------------------------------------

def barrier(process_set=global_process_set):
    """Returns once every rank of the set called barrier()."""
    submit(requests.prep_control(C.OPTYPE_BARRIER, process_set, lambda hid: None),
           "barrier").wait()


def join(process_set=global_process_set):
    """This rank has no more data: it takes part in the others' allreduces
    with zeros until every rank joined. Returns the rank that joined last."""
    return submit(requests.prep_control(C.OPTYPE_JOIN, process_set, join_result),
                  "join").wait()
