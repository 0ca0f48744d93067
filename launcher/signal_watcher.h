// SIGINT, SIGTERM and SIGHUP to hvdrun (common/stop_signals.h) become events
// for the job session.
// block_termination_signals() must run in main() before any thread starts
// (gRPC's included), so that every thread inherits the blocked mask and only
// the watcher's sigtimedwait() ever takes these signals.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace hvd::launcher {

class SignalWatcher {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread.
  static void block_termination_signals();

  // Calls on_signal(signo) on the watcher's own thread for each signal taken.
  explicit SignalWatcher(std::function<void(int)> on_signal);
  // Stops the watcher thread (within its poll interval) and joins it.
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  void run();

  std::function<void(int)> on_signal_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// "SIGINT", "SIGKILL", ... or "signal N".
std::string signal_name(int signo);

}  // namespace hvd::launcher
