#include "daemon/rendezvous/set_lanes.h"

#include <algorithm>
#include <string>

namespace hvd::daemon {

namespace {

std::string lane_name(int lane) {
  return lane < 0 ? std::string("the job") : "slot " + std::to_string(lane);
}

}  // namespace

SetLanes::~SetLanes() {
  close();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return inside_ == 0; });
}

common::Status SetLanes::enter(int lane) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  if (closed_) return common::unavailable("the rendezvous is closing");
  Lane& l = lanes_[lane];
  const auto take = [&] {
    l.held = true;
    l.since = Clock::now();
    return common::Status();
  };
  if (!l.held) return take();
  if (l.waiting >= limits_.max_waiting) {
    return common::failed_precondition(
        "the Set calls of " + lane_name(lane) + " are one at a time and " +
        std::to_string(limits_.max_waiting) + " already wait for the one in flight");
  }
  ++l.waiting;
  ++inside_;
  const auto deadline = Clock::now() + limits_.wait;
  common::Status result;
  while (true) {
    if (closed_) {
      result = common::unavailable("the rendezvous is closing");
      break;
    }
    const auto now = Clock::now();
    if (!l.held || now >= l.since + limits_.lease) {
      result = take();
      break;
    }
    if (now >= deadline) {
      result = common::failed_precondition(
          "the Set calls of " + lane_name(lane) + " are one at a time and the one in flight " +
          "took longer than " + std::to_string(limits_.wait.count() / 1000) + " s");
      break;
    }
    cv_.wait_until(lock, std::min(deadline, l.since + limits_.lease));
  }
  --l.waiting;
  --inside_;
  if (!l.held && l.waiting == 0) lanes_.erase(lane);
  cv_.notify_all();
  return result;
}

void SetLanes::leave(int lane) {
  std::lock_guard lock(mu_);
  auto it = lanes_.find(lane);
  if (it == lanes_.end() || !it->second.held) return;
  it->second.held = false;
  if (it->second.waiting == 0) lanes_.erase(it);
  cv_.notify_all();
}

void SetLanes::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

}  // namespace hvd::daemon
