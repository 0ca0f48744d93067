// Where the engines find the timeline: the Runtime owns it and may
// start or stop the timeline at any time (hvd_start_timeline); each engine
// takes a reference once per cycle, so a timeline being stopped is destroyed
// (and its file closed) only after the cycles that use it are over.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "runtime/engine/timeline.h"

namespace hvd::runtime::engine {

class ActiveTimeline {
 public:
  std::shared_ptr<Timeline> get() const {
    std::lock_guard lock(mu_);
    return timeline_;
  }

  // Replaces the timeline (null: none) and returns the previous one, which
  // closes its file when its last user (this caller or an engine cycle)
  // lets go of it.
  std::shared_ptr<Timeline> exchange(std::shared_ptr<Timeline> timeline) {
    std::lock_guard lock(mu_);
    return std::exchange(timeline_, std::move(timeline));
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<Timeline> timeline_;
};

}  // namespace hvd::runtime::engine
