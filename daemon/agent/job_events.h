// The event queue of one job on an agent: the job's Supervisor pushes output
// lines, state changes (stopped, running again) and exits (on its thread),
// one Watch call at a time takes them. Events
// stay queued until a watcher has written them, so a watcher that connects
// late, or reconnects, sees everything not yet delivered. Private to daemon/.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include <grpcpp/support/status.h>

#include "daemon/agent/supervisor.h"
#include "hvd/v1/agent.pb.h"

namespace hvd::daemon {

class JobEvents {
 public:
  // Output beyond this many queued bytes is dropped (and a notice queued in
  // its place) until the watcher catches up; exit and state events are never
  // dropped.
  static constexpr size_t kMaxQueuedBytes = 64 * 1024 * 1024;

  explicit JobEvents(int workers) : workers_(workers) {}

  // `n` more workers will report (an elastic job's replacements); false
  // when the stream has already ended (closed, or every worker exited).
  bool add_workers(int n);

  void push(const ProcessEvent& event);

  // Ends the job's stream: watchers write what is queued, then return `why`.
  void close(const grpc::Status& why);

  // Ends the job's stream at once: queued events and every later one are
  // dropped, and watchers (current and later) return `why`. For a job whose
  // launcher is gone (nobody will read them).
  void discard(const grpc::Status& why);

  // Writes events with `write` until every worker has exited and everything
  // is written (OK), the job is closed (its status), `write` fails or
  // `cancelled` returns true (CANCELLED; polled every 100 ms).
  // FAILED_PRECONDITION when another watcher is active.
  grpc::Status watch(const std::function<bool(const hvd::v1::WatchEvent&)>& write,
                     const std::function<bool()>& cancelled);

 private:
  void push_locked(hvd::v1::WatchEvent event, size_t bytes);

  int workers_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<hvd::v1::WatchEvent, size_t>> queue_;  // event, bytes
  size_t queued_bytes_ = 0;
  int64_t dropped_lines_ = 0;
  int exited_ = 0;
  bool watched_ = false;
  bool discarded_ = false;
  std::optional<grpc::Status> closed_;
};

}  // namespace hvd::daemon
