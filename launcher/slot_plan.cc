#include "launcher/slot_plan.h"

#include <algorithm>

namespace hvd::launcher {

Result<std::vector<RankSlot>> plan_slots(const std::vector<HostSlots>& hosts, int np) {
  if (np < 1) {
    return common::invalid_argument("-np " + std::to_string(np) + ": need at least 1 process");
  }
  int64_t total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np > total) {
    return common::invalid_argument("-np " + std::to_string(np) + " is more than the " +
                                    std::to_string(total) + (total == 1 ? " slot" : " slots") +
                                    " of the hosts (" + describe_hosts(hosts) + ")");
  }

  // local_size of every host that gets ranks, in host order.
  std::vector<int> local_sizes;
  std::vector<RankSlot> plan;
  plan.reserve(static_cast<size_t>(np));
  int rank = 0;
  for (const auto& h : hosts) {
    if (rank == np) break;
    int used = std::min(h.slots, np - rank);
    for (int local = 0; local < used; ++local) {
      RankSlot slot;
      slot.rank = rank++;
      slot.size = np;
      slot.host = h.host;
      slot.local_rank = local;
      slot.local_size = used;
      plan.push_back(std::move(slot));
    }
    local_sizes.push_back(used);
  }

  // Per plan host index, for each local rank: how many earlier hosts have it.
  size_t host_index = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (i > 0 && plan[i].local_rank == 0) ++host_index;
    RankSlot& slot = plan[i];
    int cross_rank = 0;
    int cross_size = 0;
    for (size_t j = 0; j < local_sizes.size(); ++j) {
      if (local_sizes[j] > slot.local_rank) {
        if (j < host_index) ++cross_rank;
        ++cross_size;
      }
    }
    slot.cross_rank = cross_rank;
    slot.cross_size = cross_size;
  }
  return plan;
}

std::vector<std::string> planned_hosts(const std::vector<RankSlot>& plan) {
  std::vector<std::string> hosts;
  for (const auto& slot : plan) {
    if (slot.local_rank == 0) hosts.push_back(slot.host);
  }
  return hosts;
}

}  // namespace hvd::launcher
