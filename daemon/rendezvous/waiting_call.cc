#include "daemon/rendezvous/waiting_call.h"

#include <utility>

namespace hvd::daemon {

void WaitingCall::set_cancel(std::function<void()> cancel) {
  bool now = false;
  {
    std::lock_guard lock(mu_);
    now = cancelled_;
    if (!now) cancel_ = cancel;
  }
  if (now && cancel) cancel();
}

void WaitingCall::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void WaitingCall::OnCancel() {
  std::function<void()> cancel;
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cancel = std::move(cancel_);
  }
  if (cancel) cancel();
}

}  // namespace hvd::daemon
