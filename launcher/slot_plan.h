// Ranks onto host slots, host-major like Horovod: hosts in the order given,
// rank 0.. filling the first host's slots, then the next host's; only as many
// slots as -np are used, so trailing hosts may get no rank.
#pragma once

#include <string>
#include <vector>

#include "common/placement.h"
#include "common/status.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

// A rank's slot: its placement (common/placement.h) in the world of -np
// ranks, on its host as named in -H / the hostfile.
using RankSlot = common::Placement;

// One entry per rank, in rank order. kInvalidArgument when np < 1 or np is
// more than the slots of all hosts.
Result<std::vector<RankSlot>> plan_slots(const std::vector<HostSlots>& hosts, int np);

// Hosts that received at least one rank, in plan order.
std::vector<std::string> planned_hosts(const std::vector<RankSlot>& plan);

}  // namespace hvd::launcher
