#include "runtime/engine/device_route.h"

#include "runtime/engine/device_data_plane.h"
#include "transports/shrinkable_transport.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

namespace hvd::runtime::engine {

using common::Status;

namespace {

bool shrinkable(transports::Transport* transport) {
  auto* s = dynamic_cast<transports::ShrinkableTransport*>(transport);
  return s != nullptr && s->can_shrink();
}

}  // namespace

DeviceRoute::DeviceRoute(DeviceConnector connect, int rank, int size, EngineCounters& counters,
                         std::chrono::milliseconds shrink_grace)
    : connect_(std::move(connect)),
      rank_(rank),
      size_(size),
      counters_(counters),
      shrink_grace_(shrink_grace) {}

DeviceRoute::~DeviceRoute() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (retiring_.joinable()) retiring_.join();
}

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
  device_ = device;
  if (!aborted_.is_ok()) {
    abort_transport_locked();  // the abort came while connecting: no op ran on it
    return aborted_;
  }
  spdlog::debug("gpu transport {} ready (device {})", transport_->name(), device);
  auto* streamed = dynamic_cast<transports::StreamedTransport*>(transport_.get());
  executor_ = std::make_unique<Executor>(
      *transport_, rank_, size_, counters_,
      std::make_unique<DeviceDataPlane>(std::move(link.work), streamed), streamed);
  return executor_.get();
}

void DeviceRoute::refuse_locked(const Status& reason) {
  if (!aborted_.is_ok()) return;  // the first reason wins
  aborted_ = reason.is_ok() ? common::aborted("aborted (no reason given)") : reason;
}

void DeviceRoute::abort_transport_locked() {
  if (!transport_ || transport_aborted_ || retiring_.joinable()) return;
  end_transport_locked();
}

void DeviceRoute::end_transport_locked() {
  transport_aborted_ = true;
  transport_->abort(aborted_);
  changed_.notify_all();  // settle()
}

void DeviceRoute::settle() {
  std::unique_lock lock(mu_);
  // The thread aborts the transport once the grace passes: a second more
  // bounds this wait however the thread is scheduled.
  // A shrink asked for but not yet taken by the thread still waits: the
  // caller (hvd.shutdown()) destroys the route next, and a destruction that
  // came before the thread woke dropped the shrink (a loaded machine).
  changed_.wait_for(lock, shrink_grace_ + std::chrono::seconds(1), [&] {
    return !retiring_.joinable() || transport_aborted_ || shrinking_;
  });
}

void DeviceRoute::abort(const Status& reason) {
  std::lock_guard lock(mu_);
  if (!aborted_.is_ok()) return;  // the first reason wins
  refuse_locked(reason);
  if (shrink_grace_.count() > 0 && shrinkable(transport_.get())) {
    retire_locked();  // waits up to the grace for shrink()
    return;
  }
  abort_transport_locked();
}

void DeviceRoute::shrink(const Status& reason, ShrinkRequest request) {
  std::lock_guard lock(mu_);
  refuse_locked(reason);
  if (!transport_ || transport_aborted_ || shrink_ || shrinking_ || stopping_) {
    abort_transport_locked();
    return;
  }
  if (!shrinkable(transport_.get())) {
    spdlog::info("the GPU transport {} cannot shrink: it is aborted, and the next round connects "
                 "anew", transport_->name());
    abort_transport_locked();
    return;
  }
  shrink_ = std::move(request);
  retire_locked();
  changed_.notify_all();
}

void DeviceRoute::retire_locked() {
  if (retiring_.joinable()) return;  // the thread runs: it takes shrink_ if still waiting
  retiring_ = std::thread([this] { retire(); });
}

void DeviceRoute::retire() {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, shrink_grace_, [&] { return shrink_.has_value() || stopping_; });
  // A shrink asked for is carried out even when the destructor came first
  // (it joins this thread): the survivors' next round counts on it.
  if (shrink_) {
    ShrinkRequest request = std::move(*shrink_);
    shrink_.reset();
    shrinking_ = true;
    changed_.notify_all();  // settle()
    request.context.device = device_;
    auto* shrinkable = dynamic_cast<transports::ShrinkableTransport*>(transport_.get());
    const int device = device_;
    lock.unlock();
    // Outside the lock: every survivor calls it, and it may take up to the
    // transport timeout. transport_ stays: only this thread aborts it now.
    auto shrunk = shrinkable->shrink(request.context, request.excluded);
    if (shrunk.is_ok()) {
      spdlog::info("GPU transport {}: shrank to the {} survivors (rank {} of them) in place",
                   std::string(shrunk.value()->name()), request.context.size,
                   request.context.rank);
      request.keep(std::move(shrunk).value(), device);
    } else {
      spdlog::warn("GPU transport: no in-place shrink ({}); it is aborted, and the next round "
                   "connects anew", shrunk.status().message());
    }
    lock.lock();
  } else if (!stopping_) {
    spdlog::info("GPU transport aborted: no lost member was named within {} ms of the failure",
                 shrink_grace_.count());
  }
  end_transport_locked();
}

std::string DeviceRoute::name() const {
  std::lock_guard lock(mu_);
  return transport_ ? std::string(transport_->name()) : std::string();
}

}  // namespace hvd::runtime::engine
