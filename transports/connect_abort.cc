#include "transports/connect_abort.h"

#include <utility>
#include <vector>

namespace hvd::transports {

ConnectAbort::Subscription& ConnectAbort::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void ConnectAbort::Subscription::reset() {
  if (owner_ != nullptr) owner_->unsubscribe(id_);
  owner_ = nullptr;
}

void ConnectAbort::fire(common::Status reason) {
  if (reason.is_ok()) reason = common::aborted("the connect was aborted");
  std::lock_guard calling(calling_);
  std::vector<Callback> callbacks;
  {
    std::lock_guard lock(mu_);
    if (fired_) return;
    fired_ = true;
    reason_ = reason;
    for (auto& [id, callback] : callbacks_) callbacks.push_back(callback);
  }
  for (auto& callback : callbacks) callback(reason);
}

bool ConnectAbort::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

common::Status ConnectAbort::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

ConnectAbort::Subscription ConnectAbort::subscribe(Callback callback) {
  common::Status already;
  {
    std::lock_guard lock(mu_);
    if (!fired_) {
      const uint64_t id = next_id_++;
      callbacks_.emplace(id, std::move(callback));
      return Subscription(this, id);
    }
    already = reason_;
  }
  callback(already);
  return Subscription();
}

void ConnectAbort::unsubscribe(uint64_t id) {
  std::lock_guard calling(calling_);  // a fire in progress finishes its calls first
  std::lock_guard lock(mu_);
  callbacks_.erase(id);
}

}  // namespace hvd::transports
