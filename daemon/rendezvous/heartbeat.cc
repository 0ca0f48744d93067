#include "daemon/rendezvous/heartbeat.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "common/logging.h"

namespace hvd::runtime {

namespace {

// Beats sent for reported commits come at most this often (a program may
// commit every few milliseconds).
constexpr std::chrono::milliseconds kCommitSpacing{20};

}  // namespace

Heartbeat::Heartbeat(RendezvousClient& client, int rank, int64_t round,
                     std::chrono::milliseconds interval, StatsSource stats,
                     std::chrono::milliseconds patience)
    : client_(client),
      rank_(rank),
      round_(round),
      interval_(interval),
      patience_(std::max(patience, interval)),
      stats_(std::move(stats)) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() { stop(); }

std::chrono::milliseconds Heartbeat::interval_for(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(500));
}

std::chrono::milliseconds Heartbeat::interval_for(std::chrono::milliseconds timeout,
                                                  int world_size) {
  const auto base = interval_for(timeout);
  const auto budget =
      std::chrono::milliseconds(int64_t{std::max(world_size, 1)} * 1000 / kJobBeatsPerSecond);
  return std::max(base, std::min(budget, timeout / 3));
}

std::chrono::milliseconds Heartbeat::patience_for(std::chrono::milliseconds timeout) {
  return timeout;
}

void Heartbeat::run() {
  pthread_setname_np(pthread_self(), "hvd-heartbeat");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const CommitReport commits = commits_;
    beat_now_ = false;
    lock.unlock();
    const auto sent = std::chrono::steady_clock::now();
    std::optional<hvd::v1::RankStats> stats;
    if (stats_ && sent - stats_sent_ >= kStatsInterval) {
      stats = stats_();
      stats_sent_ = sent;
    }
    grpc::ClientContext context;
    lock.lock();
    if (stopping_) break;
    in_flight_ = &context;
    lock.unlock();
    auto s = client_.heartbeat(rank_, round_, false, patience_, commits,
                               stats ? &*stats : nullptr, &context);
    if (!s.is_ok()) spdlog::debug("heartbeat of rank {}: {}", rank_, s.message());
    lock.lock();
    in_flight_ = nullptr;
    wake_.wait_for(lock, interval_, [&] { return stopping_ || beat_now_; });
    wake_.wait_until(lock, sent + kCommitSpacing, [&] { return stopping_; });
    if (pause_.count() > 0) {
      const auto pause = std::exchange(pause_, std::chrono::milliseconds(0));
      spdlog::warn("HVD_TEST_FAULT: the heartbeat of rank {} pauses for {} ms", rank_,
                   pause.count());
      wake_.wait_for(lock, pause, [&] { return stopping_; });
    }
  }
}

void Heartbeat::pause_once(std::chrono::milliseconds pause) {
  std::lock_guard lock(mu_);
  pause_ = pause;
}

void Heartbeat::held(HeldCommit commit) {
  {
    std::lock_guard lock(mu_);
    commits_.held = commit.commit;
    if (commit.synced) commits_.round_start = commit.commit;
    beat_now_ = true;
  }
  wake_.notify_all();
}

void Heartbeat::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (in_flight_ != nullptr) in_flight_->TryCancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto s = client_.heartbeat(rank_, round_, true, interval_);
  if (!s.is_ok()) spdlog::debug("leaving heartbeat of rank {}: {}", rank_, s.message());
}

}  // namespace hvd::runtime
