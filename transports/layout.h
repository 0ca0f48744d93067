// Where the ranks of one world sit: which share a host. Transports that
// treat ranks on one host differently (hierarchical collectives; the
// runtime's automatic choice of shm) learn it through the world's store:
// each rank publishes the host name it was given (TransportContext::host,
// the launcher's name for its host) under key_prefix + "layout/"; rank 0
// reads every rank's and publishes the hosts' ranks, encoded (encode_groups),
// under key_prefix + "layout/all", which the others read: O(N) keys and,
// for ranks in blocks of equal size, O(1) bytes per rank, not every rank
// reading every rank's key (N^2 key reads: issue 31). Every rank computes
// the same layout.
//
// Hosts are numbered in the order of their lowest rank (host_index, as
// NCCL's node beside its localRank); the ranks of a host in rank order
// (local ranks). A layout is homogeneous when every host has the same
// number of ranks. Its cross rank and size are Horovod's (placement.h): this
// rank's index among the world's ranks of its local rank, in rank order, and
// their number. On a homogeneous layout whose hosts hold blocks of
// consecutive ranks (every hvdrun job) the cross rank is the host index and
// the cross size the host count; hierarchical collectives number their
// worlds by host index either way.
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
  int host_index = 0;  // this rank's host among the world's hosts
  int host_count = 1;  // the world's hosts (hosts.size())
  bool homogeneous = true;
  // For each host (by host index), its ranks in rank order.
  std::vector<std::vector<int>> hosts;
};

// The layout of `rank` given every rank's host name (pure).
Layout layout_of(const std::vector<std::string>& hosts, int rank);

// Which host (by host index) each rank sits on, given every rank's host
// name (pure).
std::vector<int> groups_of(const std::vector<std::string>& hosts);
// `groups` as text, run-length encoded: tokens joined by ',', each "n@k"
// (the next k hosts in turn, n ranks each: a job of 64k ranks, 8 per host
// in rank order, is "8@8192") or "i*n" (n ranks on host i, one seen
// already or the next).
std::string encode_groups(const std::vector<int>& groups);
// The groups of a world of `size` from encode_groups' text; kInternal naming
// the bad token.
common::Result<std::vector<int>> decode_groups(const std::string& text, int size);
// The layout of `rank`, on `host`, given each rank's group (pure).
Layout layout_of_groups(const std::vector<int>& groups, int rank, const std::string& host);

// Publishes context.host; rank 0 reads every rank's and publishes the
// groups, which the others read (within context.timeout). A world of one
// needs no store.
common::Result<Layout> exchange_layout(const TransportContext& context);

}  // namespace hvd::transports
