"""hvd's collectives, framework-neutral: written once over a declared
framework protocol, bound by hvd.torch and hvd.numpy to their arrays.

    framework  Framework: what an op needs from an array framework (buffer
               pointer, shape, dtype code, device, stream, allocating,
               wrapping and copying arrays)
    ops        Collectives(framework): allreduce, allgather, broadcast,
               alltoall, reducescatter (in place, async, grouped);
               barrier(), join()
    requests   one hvd_op per array, its arguments checked (prep_*)
    enqueue    hvd_enqueue / hvd_enqueue_group -> a Handle (hvd._handles);
               errors typed as Horovod's enqueue raises them
    outputs    results of finished ops as arrays (outputs libhvd allocated,
               in-place copies back)
"""
