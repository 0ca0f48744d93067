#include "launcher/job_exits.h"

#include <algorithm>

namespace hvd::launcher {

JobExits::JobExits(size_t slots, size_t running) : exited_(std::max(slots, running), true) {
  std::fill(exited_.begin(), exited_.begin() + static_cast<std::ptrdiff_t>(running), false);
}

bool JobExits::exited(int slot) {
  if (slot < 0 || slot >= static_cast<int>(exited_.size()) || exited_[slot]) return false;
  exited_[slot] = true;
  ++exited_count_;
  return true;
}

void JobExits::add_failure(const WorkerExited& exit, Clock::time_point now) {
  if (!settle_deadline_) settle_deadline_ = now + kFailureSettle;
  pending_failures_.push_back(exit);
}

std::optional<WorkerExited> JobExits::take_failure() {
  settle_deadline_.reset();
  if (pending_failures_.empty()) return std::nullopt;
  auto generic = [](const WorkerExited& e) { return e.signal == 0 && e.exit_code == 1; };
  auto chosen = std::find_if(pending_failures_.begin(), pending_failures_.end(),
                             [&](const WorkerExited& e) { return !generic(e); });
  const WorkerExited exit = chosen != pending_failures_.end() ? *chosen : pending_failures_.front();
  pending_failures_.clear();
  return exit;
}

}  // namespace hvd::launcher
