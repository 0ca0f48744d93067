// Where the ranks of one world sit: which share a host. Transports that
// treat ranks on one host differently (hierarchical collectives; the
// runtime's automatic choice of shm) learn it through the world's store:
// each rank publishes the host name it was given (TransportContext::host,
// the launcher's name for its host) under key_prefix + "layout/", reads
// every rank's, and computes the same layout as every other rank.
//
// Hosts are numbered in the order of their lowest rank (cross ranks); the
// ranks of a host in rank order (local ranks). A layout is homogeneous
// when every host has the same number of ranks.
//
// Note: these cross ranks number the hosts (this rank's host among the
// world's hosts), which is Horovod's cross rank on a homogeneous layout.
#pragma once

#include <string>
#include <vector>

#include "common/placement.h"
#include "common/status.h"
#include "transports/registry.h"

namespace hvd::transports {

// This rank's placement in the world (its host the one it gave), and the
// hosts' ranks.
struct Layout : common::Placement {
  bool homogeneous = true;
  // For each host (by cross rank), its ranks in rank order.
  std::vector<std::vector<int>> hosts;
};

// The layout of `rank` given every rank's host name (pure).
Layout layout_of(const std::vector<std::string>& hosts, int rank);

// Publishes context.host and reads every rank's (within context.timeout).
// A world of one needs no store.
common::Result<Layout> exchange_layout(const TransportContext& context);

}  // namespace hvd::transports
