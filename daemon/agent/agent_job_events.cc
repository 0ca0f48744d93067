#include "daemon/agent/agent_job_events.h"

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
  bool was_empty = false;
  {
    std::lock_guard lock(mu_);
    if (discarded_) return;
    was_empty = queue_.empty();
    if (event.kind == ProcessEvent::Kind::kOutput) {
      const hvd::v1::Stream stream = event.is_stderr ? hvd::v1::STDERR : hvd::v1::STDOUT;
      const size_t bytes = event.text.size() + kLineOverhead;
      // The line joins the last event when that holds the same stream's lines.
      Queued* last = was_empty ? nullptr : &queue_.back();
      if (last == nullptr || !last->event.has_output() ||
          last->event.output().rank() != event.rank ||
          last->event.output().stream() != stream ||
          last->output_bytes + bytes > kMaxEventBytes) {
        last = &queue_.emplace_back();
        auto* lines = last->event.mutable_output();
        lines->set_rank(event.rank);
        lines->set_stream(stream);
      }
      last->event.mutable_output()->add_lines(event.text);
      last->output_bytes += bytes;
      output_bytes_ += bytes;
      if (output_bytes_ >= kMaxQueuedBytes) full_ = true;
    } else if (event.kind == ProcessEvent::Kind::kState) {
      auto* state = queue_.emplace_back().event.mutable_state();
      state->set_rank(event.rank);
      state->set_pid(event.pid);
      state->set_state(event.stopped ? hvd::v1::ProcessState::STOPPED
                                     : hvd::v1::ProcessState::RUNNING);
    } else {
      auto* exit = queue_.emplace_back().event.mutable_exit();
      exit->set_rank(event.rank);
      exit->set_pid(event.pid);
      exit->set_exit_code(event.exit_code);
      exit->set_signal(event.signal);
      ++exited_;
    }
  }
  // A watcher waits only for an empty queue.
  if (was_empty) changed_.notify_all();
}

bool JobEvents::has_room() const {
  std::lock_guard lock(mu_);
  return discarded_ || !full_;
}

void JobEvents::on_room(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  wake_ = std::move(wake);
}

bool JobEvents::written_locked(size_t bytes) {
  output_bytes_ -= bytes;
  if (!full_ || output_bytes_ > kMaxQueuedBytes / 2) return false;
  full_ = false;
  return true;
}

void JobEvents::close(const grpc::Status& why) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) closed_ = why;
  }
  changed_.notify_all();
}

void JobEvents::discard(const grpc::Status& why) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    discarded_ = true;
    queue_.clear();
    output_bytes_ = 0;
    full_ = false;
    closed_ = why;
    wake = wake_;
  }
  changed_.notify_all();
  if (wake) wake();  // the Supervisor reads (and drops) again
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
        // Written without the lock, off the queue (later lines start a new
        // event meanwhile); back at its front when the write fails.
        Queued item = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        const bool written = write(item.event);
        lock.lock();
        if (discarded_) return *closed_;  // the queue was cleared meanwhile
        if (!written) {
          queue_.push_front(std::move(item));
          return {grpc::StatusCode::CANCELLED, "the watcher went away"};
        }
        if (written_locked(item.output_bytes) && wake_) {
          auto wake = wake_;
          lock.unlock();
          wake();
          lock.lock();
        }
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
