#include "daemon/agent/orphan_timer.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>
#include <vector>

namespace hvd::daemon {

namespace {

// The longest the thread sleeps without looking again (a safety net: every
// change notifies it anyway).
constexpr std::chrono::milliseconds kMaxSleep{1'000};

}  // namespace

OrphanTimer::OrphanTimer(std::chrono::milliseconds grace, Callback on_orphaned)
    : grace_(grace), on_orphaned_(std::move(on_orphaned)) {
  if (grace_.count() > 0) thread_ = std::thread([this] { run(); });
}

OrphanTimer::~OrphanTimer() { stop(); }

void OrphanTimer::track(const std::string& job_id, std::chrono::milliseconds watched_grace) {
  std::lock_guard lock(mu_);
  const bool shorter = watched_grace.count() > 0 && watched_grace < grace_;
  jobs_[job_id] = Entry{1, std::nullopt, grace_, shorter ? watched_grace : grace_};
}

void OrphanTimer::hold(const std::string& job_id) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  ++it->second.holds;
  it->second.unheld_since.reset();
  it->second.grace = it->second.watched_grace;
}

void OrphanTimer::release(const std::string& job_id) {
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end() || it->second.holds == 0) return;
    if (--it->second.holds > 0) return;
    it->second.unheld_since = Clock::now();
  }
  changed_.notify_all();
}

void OrphanTimer::forget(const std::string& job_id) {
  std::lock_guard lock(mu_);
  jobs_.erase(job_id);
}

void OrphanTimer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OrphanTimer::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    auto wake = now + kMaxSleep;
    std::vector<std::pair<std::string, std::chrono::milliseconds>> due;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const auto& since = it->second.unheld_since;
      const auto grace = it->second.grace;
      if (since && now - *since >= grace) {
        due.emplace_back(it->first,
                         std::chrono::duration_cast<std::chrono::milliseconds>(now - *since));
        it = jobs_.erase(it);
        continue;
      }
      if (since && *since + grace < wake) wake = *since + grace;
      ++it;
    }
    if (due.empty()) {
      changed_.wait_until(lock, wake);
      continue;
    }
    lock.unlock();
    auto call = [this](const std::string& job_id, std::chrono::milliseconds unheld_for) {
      try {
        on_orphaned_(job_id, unheld_for);
      } catch (const std::exception& e) {
        spdlog::error("job={} cannot handle the loss of its launcher: {}", job_id, e.what());
      }
    };
    if (due.size() == 1) {
      call(due[0].first, due[0].second);
    } else {
      std::vector<std::thread> workers;
      for (const auto& [job_id, unheld_for] : due) workers.emplace_back(call, job_id, unheld_for);
      for (auto& t : workers) t.join();
    }
    lock.lock();
  }
}

}  // namespace hvd::daemon
