#include "daemon/rendezvous/hot_spares.h"

#include <algorithm>

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kCancelPoll = std::chrono::milliseconds(100);

}  // namespace

common::Result<std::optional<int>> HotSpares::await(int spare, std::chrono::milliseconds timeout,
                                                     const std::function<bool()>& cancelled) {
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24));
  std::unique_lock lock(mu_);
  ++waiters_[spare];
  std::optional<int> slot;
  common::Status status = common::Status::ok();
  while (true) {
    if (auto it = promoted_.find(spare); it != promoted_.end()) {
      slot = it->second;
      break;
    }
    if (closed_) {
      status = {common::StatusCode::kCancelled, "the job ended before this spare was promoted"};
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline || (cancelled && cancelled())) break;
    changed_.wait_until(lock, std::min(deadline, now + kCancelPoll));
  }
  if (--waiters_[spare] == 0) waiters_.erase(spare);
  if (!status.is_ok()) return status;
  return slot;
}

bool HotSpares::promote(int spare, int slot) {
  bool waits = false;
  {
    std::lock_guard lock(mu_);
    promoted_[spare] = slot;
    waits = waiters_.count(spare) != 0;
  }
  changed_.notify_all();
  return waits;
}

std::optional<int> HotSpares::promoted_slot(int spare) const {
  std::lock_guard lock(mu_);
  auto it = promoted_.find(spare);
  if (it == promoted_.end()) return std::nullopt;
  return it->second;
}

std::vector<int> HotSpares::waiting() const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (const auto& [spare, calls] : waiters_) {
    if (promoted_.count(spare) == 0) out.push_back(spare);
  }
  return out;
}

void HotSpares::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::daemon
