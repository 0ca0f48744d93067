// Ranks onto host slots, host-major like Horovod: hosts in the order given,
// rank 0.. filling the first host's slots, then the next host's; only as many
// slots as -np are used, so trailing hosts may get no rank.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

struct RankSlot {
  int rank = 0;
  std::string host;  // as named in -H / the hostfile
  int local_rank = 0;
  int local_size = 0;  // ranks on this host
  // Horovod's definition: the index of this host among the hosts that have a
  // rank with this local_rank, and the number of such hosts.
  int cross_rank = 0;
  int cross_size = 0;
};

// One entry per rank, in rank order. kInvalidArgument when np < 1 or np is
// more than the slots of all hosts.
Result<std::vector<RankSlot>> plan_slots(const std::vector<HostSlots>& hosts, int np);

// Hosts that received at least one rank, in plan order.
std::vector<std::string> planned_hosts(const std::vector<RankSlot>& plan);

}  // namespace hvd::launcher
