// Notices jobs whose launcher is gone. A job is "held" while a Launch for it
// is still running or a Watch of it is open; once nothing has held it for
// `grace`, on_orphaned(job_id, unheld_for) is called on the timer's own
// thread (several jobs due at once are handled side by side). A new hold
// within the grace cancels the countdown. A job may bring a shorter grace of
// its own (its launcher's heartbeat timeout), used once a Watch has held it:
// before that, the launcher may still be launching on other hosts. Private
// to daemon/.
//
// Thread-safe. One thread per timer (none when grace is 0: jobs are never
// orphaned then); every wait has a deadline; stop() joins it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace hvd::daemon {

class OrphanTimer {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback =
      std::function<void(const std::string& job_id, std::chrono::milliseconds unheld_for)>;

  // grace <= 0: never calls on_orphaned.
  OrphanTimer(std::chrono::milliseconds grace, Callback on_orphaned);
  ~OrphanTimer();  // stop()
  OrphanTimer(const OrphanTimer&) = delete;
  OrphanTimer& operator=(const OrphanTimer&) = delete;

  // Starts tracking `job_id`, held once (by the Launch that adds it). Once a
  // Watch has held it, its countdown uses `watched_grace` instead of grace()
  // when that is > 0 and shorter (never longer than the timer's grace).
  void track(const std::string& job_id,
             std::chrono::milliseconds watched_grace = std::chrono::milliseconds(0));
  // One more hold (a Watch began); no-op for a job not tracked.
  void hold(const std::string& job_id);
  // One hold less; the countdown starts when none is left.
  void release(const std::string& job_id);
  // Stops tracking the job (it is over, or its launch failed).
  void forget(const std::string& job_id);

  // Stops the thread; waits for a running on_orphaned. No call after it returns.
  void stop();

  std::chrono::milliseconds grace() const { return grace_; }

 private:
  struct Entry {
    int holds = 0;
    std::optional<Clock::time_point> unheld_since;
    std::chrono::milliseconds grace{0};          // the countdown's, now
    std::chrono::milliseconds watched_grace{0};  // from the first hold() on
  };

  void run();

  const std::chrono::milliseconds grace_;
  const Callback on_orphaned_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Entry> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hvd::daemon
