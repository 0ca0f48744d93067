// The hierarchical_allreduce setting (HVD_HIERARCHICAL_ALLREDUCE, Horovod's
// HOROVOD_HIERARCHICAL_ALLREDUCE; docs/gpu.md) for one process set's device
// ops: whether the set's layout allows it. Device allreduce runs
// hierarchically (transports/hierarchical/device_hierarchical.h) when the
// set's ranks span several hosts with the same number of ranks, more than
// one, on each; otherwise the set's device ops use the flat GPU transport,
// and the set's rank 0 says why at info level, once (as Horovod does, this
// is no error).
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "transports/layout.h"
#include "transports/registry.h"

namespace hvd::runtime {

// Exchanges the set's layout through the store (layout.h, under
// context.key_prefix), chooses (transports/hierarchical/factory.h's
// choose), logs the choice on the set's rank 0 (info),
// and gives the layout when allreduce is to be hierarchical, nothing when
// the flat transport serves. `hierarchical` and `flat` describe the two
// paths in the log line ("nccl within each host, gloo across", "nccl").
// The store's Status when the layout cannot be had (a peer never came,
// within context.timeout).
common::Result<std::optional<transports::Layout>> hierarchical_layout(
    const transports::TransportContext& context, const std::string& hierarchical,
    const std::string& flat);

}  // namespace hvd::runtime
