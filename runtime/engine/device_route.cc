#include "runtime/engine/device_route.h"

#include "runtime/engine/device_data_plane.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

namespace hvd::runtime::engine {

using common::Status;

DeviceRoute::DeviceRoute(DeviceConnector connect, int rank, int size, EngineCounters& counters)
    : connect_(std::move(connect)), rank_(rank), size_(size), counters_(counters) {}

common::Result<Executor*> DeviceRoute::executor(int device) {
  {
    std::lock_guard lock(mu_);
    if (!aborted_.is_ok()) return aborted_;
    if (executor_) return executor_.get();
    if (tried_) return failure_;
    tried_ = true;
  }
  // Outside the lock: connecting blocks (for peers, within the transport
  // timeout), and abort() must not wait for it.
  common::Result<transports::DeviceLink> made =
      connect_ ? connect_(device)
               : common::Result<transports::DeviceLink>(common::failed_precondition(
                     "device ops need a GPU transport, and this engine has none"));
  std::lock_guard lock(mu_);
  if (!made.is_ok()) {
    failure_ = made.status();
    spdlog::warn("device ops of this process set will fail: {}", failure_.message());
    return failure_;
  }
  transports::DeviceLink link = std::move(made).value();
  transport_ = std::move(link.transport);
  if (!aborted_.is_ok()) {
    transport_->abort(aborted_);  // the abort came while connecting
    return aborted_;
  }
  spdlog::debug("gpu transport {} ready (device {})", transport_->name(), device);
  auto* streamed = dynamic_cast<transports::StreamedTransport*>(transport_.get());
  executor_ = std::make_unique<Executor>(
      *transport_, rank_, size_, counters_,
      std::make_unique<DeviceDataPlane>(std::move(link.work), streamed), streamed);
  return executor_.get();
}

void DeviceRoute::abort(const Status& reason) {
  std::lock_guard lock(mu_);
  if (!aborted_.is_ok()) return;  // the first reason wins
  aborted_ = reason.is_ok() ? common::aborted("aborted (no reason given)") : reason;
  if (transport_) transport_->abort(aborted_);
}

std::string DeviceRoute::name() const {
  std::lock_guard lock(mu_);
  return transport_ ? std::string(transport_->name()) : std::string();
}

}  // namespace hvd::runtime::engine
