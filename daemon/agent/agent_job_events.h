// The event queue of one job on an agent: the job's Supervisor pushes output
// lines, state changes (stopped, running again) and exits (on its thread),
// one Watch call at a time takes them. Events
// stay queued until a watcher has written them, so a watcher that connects
// late, or reconnects, sees everything not yet delivered. Private to daemon/.
//
// No output is dropped: the queue holds up to kMaxQueuedBytes of it; past
// that has_room() is false, the job's Supervisor stops reading the workers'
// pipes (they block in their writes, as on a slow terminal), and reads again
// once the watcher has taken the queue down to half (on_room). Consecutive
// lines of one worker's stream travel together, up to kMaxEventBytes in one
// event.
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
  // What a queued line counts: its text and this much more (its string
  // object, heap block and slot in the event).
  static constexpr size_t kLineOverhead = 64;
  // Output counted up to this makes has_room() false. The queue holds at
  // most this plus one line, plus what workers that exited meanwhile left
  // in their pipes (the Supervisor reads that at once).
  static constexpr size_t kMaxQueuedBytes = 4 * 1024 * 1024;
  // Lines of one stream are gathered into one event up to this (counted as above).
  static constexpr size_t kMaxEventBytes = 64 * 1024;

  explicit JobEvents(int workers) : workers_(workers) {}

  // `n` more workers will report (an elastic job's replacements); false
  // when the stream has already ended (closed, or every worker exited).
  bool add_workers(int n);

  // Never drops or blocks: the room is the Supervisor's to respect.
  void push(const ProcessEvent& event);

  // False while the queue is full (from kMaxQueuedBytes until half of it is
  // written); true again once discarded (nobody will read it).
  bool has_room() const;
  // Called (on the watcher's or discard()'s thread, without the queue's
  // lock) when has_room() has turned true. Set it once, before watching.
  void on_room(std::function<void()> wake);

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
  struct Queued {
    hvd::v1::WatchEvent event;
    size_t output_bytes = 0;  // counted output (0: an exit or state event)
  };

  // Takes `bytes` off the count of an event written; true when that makes room.
  bool written_locked(size_t bytes);

  int workers_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  size_t output_bytes_ = 0;  // queued and being written
  bool full_ = false;        // from kMaxQueuedBytes down to half of it
  std::function<void()> wake_;
  int exited_ = 0;
  bool watched_ = false;
  bool discarded_ = false;
  std::optional<grpc::Status> closed_;
};

}  // namespace hvd::daemon
