#include "runtime/engine/no_progress.h"

namespace hvd::runtime::engine {

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// At most this many tensors are named; the rest are counted.
constexpr size_t kMaxNamed = 8;

}  // namespace

NoProgressWatch::NoProgressWatch(std::chrono::seconds limit) : limit_(limit) {}

bool NoProgressWatch::observe(bool all_blocked, bool progressed, int64_t now_ns) {
  if (limit_.count() <= 0 || !all_blocked || progressed) {
    since_ns_ = -1;
    return false;
  }
  if (since_ns_ < 0) {
    since_ns_ = now_ns;
    return false;
  }
  if (now_ns - since_ns_ < std::chrono::nanoseconds(limit_).count()) return false;
  since_ns_ = -1;
  return true;
}

std::string no_progress_message(const std::vector<PendingTensor>& pending, std::string_view set,
                                std::chrono::seconds limit) {
  std::string out = "no progress for " + std::to_string(limit.count()) + " s on " +
                    std::string(set) +
                    ": every rank is blocked waiting and none of the pending ops can run, "
                    "because the ranks wait for different tensors. Pending: ";
  for (size_t i = 0; i < pending.size() && i < kMaxNamed; ++i) {
    const PendingTensor& t = pending[i];
    out += (i > 0 ? "; '" : "'") + t.name + "' submitted by ";
    out += t.submitted_ranks.empty() ? "no rank" : ranks_text(t.submitted_ranks);
    if (t.missing_ranks.empty()) {
      out += ", waiting for the rest of its group";
    } else {
      out += ", not by " + ranks_text(t.missing_ranks);
    }
  }
  if (pending.size() > kMaxNamed) {
    out += "; and " + std::to_string(pending.size() - kMaxNamed) + " more";
  }
  out += ". The ranks' calls are out of step (a rank skipped, repeated or reordered a collective, "
         "or an unnamed op was submitted on some ranks only). Every pending op of the set failed "
         "on every rank and unnamed ops are numbered afresh "
         "(HVD_STALL_CHECK_NO_PROGRESS_SECONDS; 0 disables this check)";
  return out;
}

}  // namespace hvd::runtime::engine
