// A warning looks like Horovod's, followed by each stalled tensor's wait:
//
//   One or more tensors were submitted by a subset of ranks and are waiting
//   for the rest for more than 60 seconds. This may indicate that different
//   ranks are trying to submit different tensors or that only a subset of
//   ranks is submitting tensors, which will cause deadlock.
//   Missing ranks:
//   1: [grad_w, grad_b]
//   3: [grad_b]
//   Stalled tensors:
//   grad_w: waiting 75 s for ranks [1]
//   grad_b: waiting 62 s for ranks [1, 3]
//
// (the first paragraph is one line), and, when shutdown is enabled, a last
// line "Stalled tensors fail after 120 seconds." Tensors keep the order they
// were given in; missing ranks are listed in ascending order.
#include "runtime/engine/stall_inspector.h"

#include <string_view>

namespace hvd::runtime::engine {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::seconds waited(const PendingTensor& t, Clock::time_point now) {
  if (now <= t.first_submitted) return std::chrono::seconds(0);
  return std::chrono::duration_cast<std::chrono::seconds>(now - t.first_submitted);
}

template <typename T, typename Append>
void append_list(std::string& out, const std::vector<T>& items, Append append) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    append(out, items[i]);
  }
  out += ']';
}

std::string warning_text(const std::vector<const PendingTensor*>& stalled,
                         std::chrono::seconds check_time, std::chrono::seconds shutdown_time,
                         Clock::time_point now) {
  std::string out =
      "One or more tensors were submitted by a subset of ranks and are waiting for the rest "
      "for more than " +
      std::to_string(check_time.count()) +
      " seconds. This may indicate that different ranks are trying to submit different "
      "tensors or that only a subset of ranks is submitting tensors, which will cause "
      "deadlock.\nMissing ranks:";

  std::map<int, std::vector<std::string_view>> by_rank;
  for (const PendingTensor* t : stalled) {
    for (int rank : std::set<int>(t->missing_ranks.begin(), t->missing_ranks.end())) {
      by_rank[rank].push_back(t->name);
    }
  }
  for (const auto& [rank, names] : by_rank) {
    out += '\n';
    out += std::to_string(rank);
    out += ": ";
    append_list(out, names, [](std::string& o, std::string_view n) { o += n; });
  }

  out += "\nStalled tensors:";
  for (const PendingTensor* t : stalled) {
    out += '\n';
    out += t->name;
    out += ": waiting ";
    out += std::to_string(waited(*t, now).count());
    out += " s for ranks ";
    append_list(out, t->missing_ranks, [](std::string& o, int r) { o += std::to_string(r); });
  }

  if (shutdown_time.count() > 0) {
    out += "\nStalled tensors fail after " + std::to_string(shutdown_time.count()) + " seconds.";
  }
  return out;
}

}  // namespace

StallInspector::StallInspector(std::chrono::seconds check_time, std::chrono::seconds shutdown_time)
    : check_time_(check_time), shutdown_time_(shutdown_time) {}

StallReport StallInspector::check(const std::vector<PendingTensor>& pending,
                                  std::chrono::steady_clock::time_point now) {
  StallReport report;

  if (shutdown_time_.count() > 0) {
    for (const PendingTensor& t : pending) {
      if (waited(t, now) >= shutdown_time_) report.expired.push_back(t.name);
    }
  }

  if (check_time_.count() > 0 && (!last_warning_ || now - *last_warning_ >= check_time_)) {
    std::vector<const PendingTensor*> stalled;
    for (const PendingTensor& t : pending) {
      if (waited(t, now) >= check_time_) stalled.push_back(&t);
    }
    if (!stalled.empty()) {
      report.warning = warning_text(stalled, check_time_, shutdown_time_, now);
      last_warning_ = now;
    }
  }
  return report;
}

}  // namespace hvd::runtime::engine
