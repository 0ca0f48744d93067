// No progress at all (docs/engine.md, "No progress"): every rank of a process
// set has a thread blocked waiting for one of the set's ops, and no op of the
// set can run, because the ranks wait for different tensors (a rank skipped
// or repeated a call, or unnamed ops got out of step). Nothing can change
// that but a new op from some other thread, so after `limit` of it the
// controller fails every pending op of the set on every rank, with the
// message below, rather than let the job hang.
//
// Pure logic: the controller feeds it one observation per cycle, with rank
// 0's clock, so every rank of the set decides in the same cycle.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine/stall_inspector.h"

namespace hvd::runtime::engine {

class NoProgressWatch {
 public:
  // limit 0 disables the watch.
  explicit NoProgressWatch(std::chrono::seconds limit);

  // One cycle: `all_blocked` when every rank reported a blocked thread,
  // `progressed` when the cycle ran or decided anything. True when the set
  // has been blocked without progress for `limit` (then it starts over).
  bool observe(bool all_blocked, bool progressed, int64_t now_ns);

  std::chrono::seconds limit() const { return limit_; }

 private:
  std::chrono::seconds limit_;
  int64_t since_ns_ = -1;  // first cycle of the current blocked stretch
};

// The error every rank reports: each pending tensor with the ranks that did
// and did not submit it. `set` names the process set ("the global process
// set", "process set 2").
std::string no_progress_message(const std::vector<PendingTensor>& pending, std::string_view set,
                                std::chrono::seconds limit);

}  // namespace hvd::runtime::engine
