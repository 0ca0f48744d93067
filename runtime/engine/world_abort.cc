#include "runtime/engine/world_abort.h"

#include <utility>

namespace hvd::runtime::engine {

bool WorldAbort::trigger(common::Status reason) {
  if (reason.is_ok()) reason = common::aborted("aborted (no reason given)");
  std::lock_guard lock(mu_);
  if (!reason_.is_ok()) return false;
  reason_ = std::move(reason);
  return true;
}

bool WorldAbort::aborted() const {
  std::lock_guard lock(mu_);
  return !reason_.is_ok();
}

common::Status WorldAbort::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

void abort_sets(const std::vector<std::shared_ptr<const ProcessSet>>& sets,
                const common::Status& reason) {
  for (const auto& set : sets) {
    if (set->engine) set->engine->abort(reason);
  }
}

}  // namespace hvd::runtime::engine
