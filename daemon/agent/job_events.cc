#include "daemon/agent/job_events.h"

#include <spdlog/spdlog.h>

namespace hvd::daemon {

namespace {
constexpr std::chrono::milliseconds kCancelPoll{100};
}

bool JobEvents::add_workers(int n) {
  std::lock_guard lock(mu_);
  if (discarded_ || closed_ || exited_ >= workers_) return false;
  workers_ += n;
  return true;
}

void JobEvents::push(const ProcessEvent& event) {
  hvd::v1::WatchEvent out;
  size_t bytes = 64;
  if (event.kind == ProcessEvent::Kind::kOutput) {
    auto* line = out.mutable_output();
    line->set_rank(event.rank);
    line->set_stream(event.is_stderr ? hvd::v1::STDERR : hvd::v1::STDOUT);
    line->set_text(event.text);
    bytes += event.text.size();
  } else if (event.kind == ProcessEvent::Kind::kState) {
    auto* state = out.mutable_state();
    state->set_rank(event.rank);
    state->set_pid(event.pid);
    state->set_state(event.stopped ? hvd::v1::ProcessState::STOPPED
                                   : hvd::v1::ProcessState::RUNNING);
  } else {
    auto* exit = out.mutable_exit();
    exit->set_rank(event.rank);
    exit->set_pid(event.pid);
    exit->set_exit_code(event.exit_code);
    exit->set_signal(event.signal);
  }
  {
    std::lock_guard lock(mu_);
    if (discarded_) return;
    if (out.has_output() && queued_bytes_ + bytes > kMaxQueuedBytes) {
      if (dropped_lines_++ == 0) {
        spdlog::warn("agent: more than {} MiB of output queued; dropping lines until the "
                     "watcher catches up", kMaxQueuedBytes >> 20);
      }
      return;
    }
    if (dropped_lines_ > 0) {
      hvd::v1::WatchEvent notice;
      auto* line = notice.mutable_output();
      line->set_rank(event.rank);
      line->set_stream(hvd::v1::STDERR);
      line->set_text("hvd-agent: " + std::to_string(dropped_lines_) +
                     " line(s) of output dropped: they were not read in time");
      dropped_lines_ = 0;
      push_locked(std::move(notice), 128);
    }
    if (out.has_exit()) ++exited_;
    push_locked(std::move(out), bytes);
  }
  changed_.notify_all();
}

void JobEvents::push_locked(hvd::v1::WatchEvent event, size_t bytes) {
  queue_.emplace_back(std::move(event), bytes);
  queued_bytes_ += bytes;
}

void JobEvents::close(const grpc::Status& why) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) closed_ = why;
  }
  changed_.notify_all();
}

void JobEvents::discard(const grpc::Status& why) {
  {
    std::lock_guard lock(mu_);
    discarded_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    closed_ = why;
  }
  changed_.notify_all();
}

grpc::Status JobEvents::watch(const std::function<bool(const hvd::v1::WatchEvent&)>& write,
                              const std::function<bool()>& cancelled) {
  std::unique_lock lock(mu_);
  if (watched_) {
    return {grpc::StatusCode::FAILED_PRECONDITION, "the job already has a watcher"};
  }
  watched_ = true;
  auto stream = [&]() -> grpc::Status {
    for (;;) {
      if (discarded_) return *closed_;
      while (!queue_.empty()) {
        // Written without the lock; taken off the queue only once written.
        hvd::v1::WatchEvent event = queue_.front().first;
        lock.unlock();
        const bool written = write(event);
        lock.lock();
        if (!written) return {grpc::StatusCode::CANCELLED, "the watcher went away"};
        if (discarded_) return *closed_;  // the queue was cleared meanwhile
        queued_bytes_ -= queue_.front().second;
        queue_.pop_front();
      }
      if (exited_ >= workers_) return grpc::Status::OK;
      if (closed_) return *closed_;
      if (cancelled()) return {grpc::StatusCode::CANCELLED, "Watch cancelled by the client"};
      changed_.wait_for(lock, kCancelPoll);
    }
  };
  grpc::Status status = stream();
  watched_ = false;
  return status;
}

}  // namespace hvd::daemon
