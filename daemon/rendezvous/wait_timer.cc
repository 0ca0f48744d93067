#include "daemon/rendezvous/wait_timer.h"

namespace hvd::daemon {

WaitTimer::~WaitTimer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t WaitTimer::at(Clock::time_point when, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  const bool first = due_.empty() || when < due_.begin()->first;
  by_id_[id] = due_.emplace(when, std::make_pair(id, std::move(fn)));
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { run(); });
  if (first) changed_.notify_all();
  return id;
}

void WaitTimer::cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  due_.erase(it->second);
  by_id_.erase(it);
}

size_t WaitTimer::pending() const {
  std::lock_guard lock(mu_);
  return due_.size();
}

void WaitTimer::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (due_.empty()) {
      changed_.wait(lock);
      continue;
    }
    auto first = due_.begin();
    if (Clock::now() < first->first) {
      changed_.wait_until(lock, first->first);
      continue;
    }
    std::function<void()> fn = std::move(first->second.second);
    by_id_.erase(first->second.first);
    due_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace hvd::daemon
