// Horovod's cross rank from every rank's local rank: cross_size is the
// number of ranks with this rank's local rank, cross_rank this rank's index
// among them (in rank order). For launchers that do not say which host a
// process is on (Open MPI across hosts); one set and one get per rank
// through the rendezvous store.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "common/store.h"
#include "runtime/discovery/world.h"

namespace hvd::runtime {

// Publishes world->local_rank under `prefix` and sets world->cross_rank
// and world->cross_size from every rank's.
common::Status exchange_cross_ranks(common::Store& store, const std::string& prefix,
                                    WorldInfo* world, std::chrono::milliseconds timeout);

}  // namespace hvd::runtime
