#include "daemon/rendezvous/heartbeat.h"

#include <pthread.h>

#include <algorithm>

#include "common/logging.h"

namespace hvd::runtime {

Heartbeat::Heartbeat(RendezvousClient& client, int rank, int64_t round,
                     std::chrono::milliseconds interval)
    : client_(client), rank_(rank), round_(round), interval_(interval) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() { stop(); }

std::chrono::milliseconds Heartbeat::interval_for(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(500));
}

void Heartbeat::run() {
  pthread_setname_np(pthread_self(), "hvd-heartbeat");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto s = client_.heartbeat(rank_, round_, false, interval_);
    if (!s.is_ok()) spdlog::debug("heartbeat of rank {}: {}", rank_, s.message());
    lock.lock();
    wake_.wait_for(lock, interval_, [&] { return stopping_; });
  }
}

void Heartbeat::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto s = client_.heartbeat(rank_, round_, true, interval_);
  if (!s.is_ok()) spdlog::debug("leaving heartbeat of rank {}: {}", rank_, s.message());
}

}  // namespace hvd::runtime
