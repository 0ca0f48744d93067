// The stall inspector: notices tensors that some ranks of a process set have
// submitted and others have not, for longer than the check time. Pure logic
// over what the controller knows; the controller calls check() once per
// cycle and logs what it returns (on the set's coordinator only).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hvd::runtime::engine {

// A tensor some, but not all, ranks have submitted.
struct PendingTensor {
  std::string name;
  std::chrono::steady_clock::time_point first_submitted;  // by the first rank
  std::vector<int> missing_ranks;                          // ascending
  std::vector<int> submitted_ranks;                        // ascending
};

struct StallReport {
  // One warning (multi-line text is fine) when something stalled past the
  // check time and was not reported within the last check period; empty
  // otherwise. Names each stalled tensor, how long it waited and the ranks
  // that have not submitted it, and, per missing rank, its stalled tensors.
  std::string warning;
  // Tensors stalled longer than the shutdown time (when that is enabled):
  // the engine fails them (and everything pending) with an error.
  std::vector<std::string> expired;
};

class StallInspector {
 public:
  // check_time 0 disables warnings; shutdown_time 0 disables shutdown.
  StallInspector(std::chrono::seconds check_time, std::chrono::seconds shutdown_time);

  StallReport check(const std::vector<PendingTensor>& pending,
                    std::chrono::steady_clock::time_point now);

 private:
  std::chrono::seconds check_time_;
  std::chrono::seconds shutdown_time_;
  // When the last warning was given; none yet at first.
  std::optional<std::chrono::steady_clock::time_point> last_warning_;
};

}  // namespace hvd::runtime::engine
