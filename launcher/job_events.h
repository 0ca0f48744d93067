// Everything the job session (job_session.h) reacts to arrives as a
// JobEvent on one queue: worker output, stops and exits (from the Watch
// stream reader), the end of that streams (one per agent), signals to hvdrun (from
// the signal watcher) and the completion of an asynchronous Terminate of
// every agent, and in elastic jobs the host discovery script's results. The
// session's thread pops; any thread pushes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

struct WorkerOutput {
  int rank = 0;
  bool is_stderr = false;
  std::string text;  // one line without '\n'
};

struct WorkerExited {
  int rank = 0;
  int64_t pid = 0;
  int exit_code = 0;  // when signal == 0
  int signal = 0;     // the signal that ended the worker, or 0
};

// A worker process (by its launch rank) stopped — state T in /proc: SIGSTOP,
// a debugger — or runs again; its agent samples it every 500 ms.
struct WorkerStateChanged {
  int rank = 0;
  int64_t pid = 0;
  bool stopped = false;
};

// An agent's Watch stream ended: normally (every worker exited) or not.
struct WatchEnded {
  common::Status status;
  int agent = 0;  // which agent of the job (index into HostAgents)
};

struct SignalReceived {
  int signal = 0;
};

struct TerminateDone {
  common::Status status;
};

// Elastic jobs: one run of the host discovery script (launcher/elastic/
// discovery_poller.h): its hosts, or why the run failed.
struct HostsDiscovered {
  common::Status status;
  std::vector<HostSlots> hosts;
};

using JobEvent = std::variant<WorkerOutput, WorkerExited, WorkerStateChanged, WatchEnded,
                              SignalReceived, TerminateDone, HostsDiscovered>;

class EventQueue {
 public:
  void push(JobEvent event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // The oldest event, or nothing once `deadline` passes.
  std::optional<JobEvent> pop_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready_.wait_until(lock, deadline, [&] { return !events_.empty(); })) return std::nullopt;
    JobEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<JobEvent> events_;
};

}  // namespace hvd::launcher
