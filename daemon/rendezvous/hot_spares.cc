#include "daemon/rendezvous/hot_spares.h"

#include "daemon/rendezvous/blocking_wait.h"

#include <algorithm>
#include <condition_variable>
#include <memory>

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

common::Result<std::optional<int>> HotSpares::await(int spare, std::chrono::milliseconds timeout,
                                                     const std::function<bool()>& cancelled) {
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24));
  using Answer = common::Result<std::optional<int>>;
  return wait_for_answer<Answer>(
      [&](std::function<void(Answer)> done) { return await_async(spare, std::move(done)); },
      [&](uint64_t ticket, GiveUp) { give_up(ticket); }, deadline, cancelled);
}

uint64_t HotSpares::await_async(int spare, AwaitDone done) {
  std::optional<common::Result<std::optional<int>>> now;
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    if (auto it = promoted_.find(spare); it != promoted_.end()) {
      now = std::optional<int>(it->second);
    } else if (closed_) {
      now = common::Status{common::StatusCode::kCancelled,
                           "the job ended before this spare was promoted"};
    } else {
      ticket = next_ticket_++;
      ++waiters_[spare];
      awaiting_.emplace(ticket, Waiting{spare, std::move(done)});
    }
  }
  if (now) done(std::move(*now));
  return ticket;
}

void HotSpares::give_up(uint64_t ticket) {
  AwaitDone done;
  {
    std::lock_guard lock(mu_);
    auto it = awaiting_.find(ticket);
    if (it == awaiting_.end()) return;
    if (--waiters_[it->second.spare] == 0) waiters_.erase(it->second.spare);
    done = std::move(it->second.done);
    awaiting_.erase(it);
  }
  done(std::optional<int>());
}

bool HotSpares::promote(int spare, int slot) {
  bool waits = false;
  std::vector<AwaitDone> ready;
  {
    std::lock_guard lock(mu_);
    promoted_[spare] = slot;
    waits = waiters_.count(spare) != 0;
    for (auto it = awaiting_.begin(); it != awaiting_.end();) {
      if (it->second.spare != spare) {
        ++it;
        continue;
      }
      ready.push_back(std::move(it->second.done));
      it = awaiting_.erase(it);
    }
    waiters_.erase(spare);
  }
  for (auto& done : ready) done(std::optional<int>(slot));
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
  std::map<uint64_t, Waiting> awaiting;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    awaiting.swap(awaiting_);
    waiters_.clear();
  }
  for (auto& [ticket, w] : awaiting) {
    w.done(common::Status{common::StatusCode::kCancelled,
                          "the job ended before this spare was promoted"});
  }
}

}  // namespace hvd::daemon
