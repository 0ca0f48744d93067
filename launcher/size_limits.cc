#include "launcher/size_limits.h"

#include <algorithm>
#include <string>

#include "common/job_limits.h"
#include "common/printable.h"

namespace hvd::launcher {

common::Status check_job_size(const std::vector<HostSlots>& hosts, int np, bool np_given,
                              const ElasticOptions& elastic) {
  using common::kMaxWorkersPerHost;
  using common::kMaxWorldSize;
  const std::string most = "a job has at most " + std::to_string(kMaxWorldSize) + " workers";
  if (np > kMaxWorldSize) {
    if (np_given) return common::invalid_argument("-np " + std::to_string(np) + ": " + most);
    return common::invalid_argument("the hosts have " + std::to_string(np) +
                                    " slots and -np is not given: " + most + "; give -np");
  }
  if (elastic.enabled && elastic.max_np > kMaxWorldSize) {
    return common::invalid_argument("--max-np " + std::to_string(elastic.max_np) + ": " + most);
  }
  // Host-major, as plan_slots fills them.
  int left = np;
  for (const HostSlots& host : hosts) {
    const int used = std::min(host.slots, left);
    if (used > kMaxWorkersPerHost) {
      return common::invalid_argument(
          "-np " + std::to_string(np) + " puts " + std::to_string(used) + " workers on host '" +
          common::printable(host.host) + "'; one host runs at most " +
          std::to_string(kMaxWorkersPerHost) + " (spread them with -H or --hostfile)");
    }
    left -= used;
    if (left == 0) break;
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher
