// Helpers shared by the daemon tests: every wait has a deadline, so a test
// whose event never comes fails instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent/supervisor.h"

namespace hvd::daemon::test {

using namespace std::chrono_literals;

// The value of a Result that must be OK (fails the test otherwise).
template <typename T>
T value_of(common::Result<T> result) {
  if (!result.is_ok()) throw std::runtime_error(result.status().to_string());
  return std::move(result).value();
}

// Polls `pred` until it holds or `timeout` passes; returns its last value.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

// Collects a Supervisor's events; declare it before the Supervisor.
class EventLog {
 public:
  Supervisor::EventSink sink() {
    return [this](const ProcessEvent& e) {
      {
        std::lock_guard lock(mu_);
        events_.push_back(e);
      }
      changed_.notify_all();
    };
  }

  // Waits until `exits` exit events arrived; false at the deadline.
  bool wait_exits(size_t exits, std::chrono::milliseconds timeout = 5000ms) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return count_exits() >= exits; });
  }

  // Waits until a line equal to `text` arrived.
  bool wait_line(const std::string& text, std::chrono::milliseconds timeout = 5000ms) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const auto& e : events_) {
        if (e.kind == ProcessEvent::Kind::kOutput && e.text == text) return true;
      }
      return false;
    });
  }

  std::vector<ProcessEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

  std::vector<std::string> lines(int64_t pid, bool is_stderr) {
    std::vector<std::string> out;
    for (const auto& e : events()) {
      if (e.kind == ProcessEvent::Kind::kOutput && e.pid == pid && e.is_stderr == is_stderr) {
        out.push_back(e.text);
      }
    }
    return out;
  }

  // The exit event of `pid`; kind stays kOutput when there is none.
  ProcessEvent exit_of(int64_t pid) {
    for (const auto& e : events()) {
      if (e.kind == ProcessEvent::Kind::kExit && e.pid == pid) return e;
    }
    return {};
  }

 private:
  size_t count_exits() const {
    size_t n = 0;
    for (const auto& e : events_) n += e.kind == ProcessEvent::Kind::kExit ? 1 : 0;
    return n;
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<ProcessEvent> events_;
};

// A spec running `argv` with a minimal environment.
inline ProcessSpec spec_of(std::vector<std::string> argv, int rank = 0) {
  ProcessSpec spec;
  spec.rank = rank;
  spec.argv = std::move(argv);
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  return spec;
}

// True once `pid` no longer runs: gone, or a zombie waiting to be reaped by
// someone else (an orphan is reaped by init, which may take a while).
bool process_gone(int64_t pid);

// Processes whose command line is exactly `argv`.
int count_processes(const std::vector<std::string>& argv);

}  // namespace hvd::daemon::test
