// Hierarchical allreduce for device (CUDA) buffers: the hierarchical
// transport's three steps (hierarchical_transport.h) with
//  (a) a reduce-scatter among this host's ranks on a device transport (the
//      GPU transport, e.g. nccl, over a world of this host's ranks),
//  (b) this rank's slice copied to pinned host memory (the device work, on
//      the op's stream, waited for within the transport timeout), allreduced
//      with this local rank's peers on the other hosts over gloo, and copied
//      back (staging/'s StagedTransport around that gloo world),
//  (c) an allgather among this host's ranks on the device transport.
// Every other op runs on a flat device transport of every rank. Each world
// connects under a key prefix of its own below context.key_prefix
// (factory.h's sub_world). abort() reaches all three; the first failure
// sticks.
#pragma once

#include <functional>
#include <memory>

#include "transports/device_work.h"
#include "transports/layout.h"
#include "transports/registry.h"

namespace hvd::transports::hierarchical {

// Makes the device transport of one world (the GPU transport's factory).
using DeviceTransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(const TransportContext&)>;

// kFailedPrecondition when the hosts do not all have the same number of
// ranks; the first world's Status that cannot connect otherwise. `work`:
// the device work of context.device (the slice's device memory, the copies).
// `device_name` names the device transport in the transport's name
// ("hierarchical (nccl within hosts, gloo across)").
Result<std::unique_ptr<Transport>> create_device(const TransportContext& context,
                                                 const Layout& layout,
                                                 const DeviceTransportFactory& device,
                                                 const std::string& device_name,
                                                 std::shared_ptr<DeviceWork> work);

}  // namespace hvd::transports::hierarchical
