// Everything the job session (job_session.h) reacts to arrives as a
// JobEvent on one queue: worker output, stops and exits (from the Watch
// stream reader), the end of that streams (one per agent), signals to hvdrun (from
// the signal watcher) and the completion of an asynchronous Terminate of
// every agent, and in elastic jobs the host discovery script's results. The
// session's thread pops; any thread pushes.
//
// Output is bounded: push_output waits while kMaxOutputBytes of it are
// queued, so that a Watch reader stops reading its stream when hvdrun's
// stdout is slower than the workers (and the agent then stops reading the
// workers' pipes: no line is dropped).
#pragma once

#include <atomic>
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

// Lines one worker wrote to one stream, in order, each without its '\n'.
struct WorkerOutput {
  int rank = 0;
  bool is_stderr = false;
  std::vector<std::string> lines;
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
  // What a queued line counts: its text and this much more.
  static constexpr size_t kLineOverhead = 64;
  // push_output waits while this much output is queued.
  static constexpr size_t kMaxOutputBytes = 4 * 1024 * 1024;

  static size_t output_bytes(const WorkerOutput& out) {
    size_t bytes = 0;
    for (const auto& line : out.lines) bytes += line.size() + kLineOverhead;
    return bytes;
  }

  // Never waits, whatever the event.
  void push(JobEvent event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto* out = std::get_if<WorkerOutput>(&event)) output_bytes_ += output_bytes(*out);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // Waits while kMaxOutputBytes of output are queued, unless or until
  // `stop` is set (whoever sets it calls wake_output_waiters()).
  void push_output(WorkerOutput out, const std::atomic<bool>& stop) {
    const size_t bytes = output_bytes(out);
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock, [&] { return output_bytes_ < kMaxOutputBytes || stop.load(); });
      output_bytes_ += bytes;
      events_.push_back(std::move(out));
    }
    ready_.notify_one();
  }

  // Waiting push_output calls check their `stop` again.
  void wake_output_waiters() {
    std::lock_guard<std::mutex> lock(mu_);
    room_.notify_all();
  }

  // The oldest event, or nothing once `deadline` passes.
  std::optional<JobEvent> pop_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready_.wait_until(lock, deadline, [&] { return !events_.empty(); })) return std::nullopt;
    JobEvent event = std::move(events_.front());
    events_.pop_front();
    if (auto* out = std::get_if<WorkerOutput>(&event)) {
      output_bytes_ -= output_bytes(*out);
      if (output_bytes_ < kMaxOutputBytes) room_.notify_all();
    }
    return event;
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable room_;  // output_bytes_ dropped below the limit
  std::deque<JobEvent> events_;
  size_t output_bytes_ = 0;  // of the WorkerOutput events queued
};

}  // namespace hvd::launcher
