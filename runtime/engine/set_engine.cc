#include "runtime/engine/set_engine.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/engine/fusion_planner.h"

namespace hvd::runtime::engine {

namespace {

using common::Status;

ControllerOptions controller_options(const SetEngineOptions& o) {
  ControllerOptions c;
  c.process_set_id = o.process_set_id;
  c.rank = o.rank;
  c.global_ranks = o.global_ranks;
  c.cache_capacity = o.cache_capacity;
  c.stall_warning = o.stall_warning;
  c.stall_shutdown = o.stall_shutdown;
  c.no_progress = o.no_progress;
  return c;
}

std::string set_name(int32_t id) {
  return id == 0 ? "the global process set" : "process set " + std::to_string(id);
}

}  // namespace

SetEngine::SetEngine(SetEngineOptions options, std::unique_ptr<transports::Transport> transport,
                     HandleTable& handles, const ActiveTimeline* timeline)
    : options_(std::move(options)),
      prefix_(options_.process_set_id == 0 ? ""
                                           : "ps" + std::to_string(options_.process_set_id) + "/"),
      transport_(std::move(transport)),
      handles_(handles),
      timeline_(timeline),
      controller_(controller_options(options_), *transport_, counters_),
      executor_(*transport_, options_.rank, static_cast<int>(options_.global_ranks.size()),
                counters_),
      device_(options_.connect_device, options_.rank,
              static_cast<int>(options_.global_ranks.size()), counters_,
              options_.device_shrink_grace),
      tuning_(options_.cycle_time_ms, options_.fusion_threshold, *transport_,
              options_.process_set_id == 0 && options_.rank == 0 ? options_.autotune
                                                                 : std::nullopt),
      completions_(set_name(options_.process_set_id), options_.device_batches_in_flight,
                   options_.device_timeout,
                   [this](DeviceCompletions::Batch& batch) { complete_device(batch); },
                   [this](const Status& failure) {
                     // A batch failed on the device: the set fails as on a
                     // transport failure (its transports aborted: kernels end).
                     spdlog::log(options_.on_transport_failure ? spdlog::level::info
                                                               : spdlog::level::err,
                                 "{}: device work failed, failing every op: {}",
                                 set_name(options_.process_set_id), failure.message());
                     if (options_.on_transport_failure) options_.on_transport_failure(failure);
                     abort(failure);
                   }) {
  queue_.count_into(&counters_.ops);  // ops finished, for /metrics (engine_stats.h)
  thread_ = std::thread([this] { run(); });
}

SetEngine::~SetEngine() {
  stop(common::aborted("hvd is shutting down"));
}

Status SetEngine::enqueue(Entry& entry) { return queue_.push(entry); }

Status SetEngine::enqueue_group(std::vector<Entry>& entries) { return queue_.push_group(entries); }

void SetEngine::stop(Status reason) {
  std::lock_guard join_lock(join_mu_);
  {
    std::lock_guard lock(reason_mu_);
    if (stop_reason_.is_ok()) stop_reason_ = std::move(reason);
  }
  stop_requested_.store(true);
  queue_.interrupt();
  if (thread_.joinable()) thread_.join();
}

void SetEngine::abort(Status reason) {
  if (reason.is_ok()) reason = common::aborted("aborted (no reason given)");
  {
    std::lock_guard lock(reason_mu_);
    if (!abort_reason_.is_ok()) return;  // the first reason wins
    abort_reason_ = reason;
  }
  queue_.close(reason);        // later enqueues fail at once
  transport_->abort(reason);   // a blocked exchange or op returns at once
  device_.abort(reason);       // the GPU transport too, once it exists
  queue_.interrupt();          // a sleeping engine wakes and fails what it holds
}

void SetEngine::shrink_device(const Status& reason, ShrinkRequest request) {
  device_.shrink(reason, std::move(request));  // before abort(): the route shrinks, not aborts
  abort(reason);
}

Status SetEngine::abort_reason() const {
  std::lock_guard lock(reason_mu_);
  return abort_reason_;
}

void SetEngine::complete(Entry& entry, Status status, OpOutput output) {
  queue_.finish(entry);  // first: a waiter may reuse the name at once
  handles_.complete(entry.handle, std::move(status), std::move(output));
}

void SetEngine::run() noexcept {
  std::vector<Entry> drained;
  CyclePlan plan;
  try {
    std::string thread_name = "hvd-engine-" + std::to_string(options_.process_set_id);
    pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
    cycle_loop(drained, plan);
    completions_.drain();  // the handles of device batches in flight
  } catch (const std::exception& e) {
    fail_everything(common::internal_error("the engine of " + set_name(options_.process_set_id) +
                                           " stopped on an unexpected error: " + e.what()),
                    plan);
  } catch (...) {
    fail_everything(common::internal_error("the engine of " + set_name(options_.process_set_id) +
                                           " stopped on an unexpected error"),
                    plan);
  }
}

void SetEngine::wait_for_cycle(Clock::time_point last_start, Clock::time_point last_end) {
  const auto cycle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(tuning_.cycle_time_ms()));
  Clock::duration quiet = options_.batch_quiet;
  if (quiet.count() < 0) {
    quiet = std::min<Clock::duration>(cycle / 50, std::chrono::microseconds(20));
  }
  if (!queue_.has_work() && !controller_.has_news()) {
    if (!controller_.busy()) {
      // Idle: sleep until work arrives or idle_wake passes (peers waiting for
      // this rank block in the exchange meanwhile, without spinning).
      queue_.wait(last_end + options_.idle_wake, true);
    } else if (controller_.every_rank_waits()) {
      // Every rank waits on another: only new work (here or, through the
      // exchange, elsewhere) can help; at most one exchange per cycle_time
      // (and never a sleep past idle_wake, as when idle).
      queue_.wait(last_start + std::min<Clock::duration>(cycle, options_.idle_wake), true);
    }
    // Else some rank holds nothing yet: go straight in, the exchange blocks
    // until it comes (with its ops, or after its idle_wake).
  }
  // The batching window gathers a burst of pushes into one exchange; a set
  // of one rank exchanges nothing, so its ops go at once (a lone op would
  // otherwise wait out the quiet time: ~20 us of a ~50 us call).
  if (options_.global_ranks.size() > 1) queue_.wait_quiet(quiet, cycle);
}

void SetEngine::cycle_loop(std::vector<Entry>& drained, CyclePlan& plan) {
  Clock::time_point last_start = Clock::now() - std::chrono::hours(1);
  Clock::time_point last_end = last_start;
  for (;;) {
    wait_for_cycle(last_start, last_end);
    if (Status aborted = abort_reason(); !aborted.is_ok()) {
      fail_everything(aborted, plan);  // no exchange: the world is gone
      return;
    }
    last_start = Clock::now();
    const bool stopping = stop_requested_.load();
    drained.clear();
    queue_.drain(drained);
    // Read after the drain: an op enqueued after hvd_start_timeline() returned
    // is then always recorded (reading first could miss the new timeline).
    std::shared_ptr<Timeline> timeline = timeline_ != nullptr ? timeline_->get() : nullptr;
    cycle_timeline_ = timeline;
    if (timeline) {
      for (Entry& e : drained) {
        if (e.request.op_type == OpType::kJoin) continue;
        timeline->begin(row(e.request.name), "NEGOTIATE", e.enqueued);
        e.negotiate_timeline = timeline.get();
      }
    }
    plan.clear();
    controller_.add(drained, plan);
    for (auto& [entry, status] : plan.refused) complete(entry, status);

    // Only a rank that holds ops of the set can be blocked on one of them.
    const bool blocked =
        controller_.busy() && handles_.waited_pending(options_.process_set_id) > 0;
    controller_.set_tune(tuning_.outgoing());
    Status s = controller_.negotiate(stopping, blocked, plan);
    if (!s.is_ok()) {
      fail_transport("negotiation", s, plan);
      return;
    }
    tuning_.apply(controller_.agreed_tune());  // every rank, this same cycle
    if (plan.shutdown_rank >= 0) {
      Status reason;
      if (plan.shutdown_self) {
        std::lock_guard lock(reason_mu_);
        reason = stop_reason_;
      } else if (options_.process_set_id == 0) {
        reason = common::aborted("hvd is shutting down on rank " + std::to_string(plan.shutdown_rank));
      } else {
        reason = common::aborted(set_name(options_.process_set_id) + " was stopped on rank " +
                                 std::to_string(plan.shutdown_rank) +
                                 " (hvd_shutdown or hvd_remove_process_set)");
      }
      fail_everything(reason, plan);
      return;
    }
    if (plan.restart_names >= 0) {
      // Before the failed ops complete: the calls their waiters make next
      // get the new names.
      queue_.restart_names(plan.restart_names);
      if (!plan.no_progress.empty()) spdlog::error("{}", plan.no_progress);
    }
    if (!plan.stall_warning.empty() && options_.rank == 0) {
      if (options_.process_set_id == 0) {
        spdlog::warn("{}", plan.stall_warning);
      } else {
        spdlog::warn("{}: {}", set_name(options_.process_set_id), plan.stall_warning);
      }
    }
    if (!plan.responses.empty()) {
      if (timeline) {
        timeline->mark("CYCLE", last_start);
        for (Response& r : plan.responses) {
          if (!r.has_entry || r.entry.negotiate_timeline != timeline.get()) continue;
          timeline->end(row(r.entry.request.name), "NEGOTIATE");
          timeline->begin(row(r.entry.request.name), "QUEUE");
        }
      }
      tuning_.before_run(plan);
      s = execute(plan, timeline.get());
      if (!s.is_ok()) {
        fail_transport("transport", s, plan);
        return;
      }
      controller_.finish(plan);
      tuning_.after_run(last_end, Clock::now());
    }
    if (plan.join_done && plan.join_entry) {
      OpOutput out;
      out.join_last_rank = plan.join_last_rank;
      complete(*plan.join_entry, Status::ok(), std::move(out));
      plan.join_entry.reset();
    }
    cycle_timeline_.reset();  // a stopped timeline closes once no cycle holds it
    last_end = Clock::now();
  }
}

void SetEngine::finish_response(Response& r, Timeline* timeline) {
  if (r.done) return;
  r.done = true;
  if (!r.has_entry) return;
  if (timeline != nullptr && r.entry.negotiate_timeline == timeline) {
    timeline->end(row(r.entry.request.name), "QUEUE");
  }
  complete(r.entry, r.error, std::move(r.output));
}

Status SetEngine::execute(CyclePlan& plan, Timeline* timeline) {
  std::vector<Response>& responses = plan.responses;
  items_.clear();
  item_response_.clear();
  for (size_t i = 0; i < responses.size(); ++i) {
    Response& r = responses[i];
    if (!r.error.is_ok()) {
      // Decided errors: nothing to run (groups complete together below).
      if (r.op().group_id < 0) finish_response(r, timeline);
      continue;
    }
    const Request& q = r.op();
    FusionItem item;
    item.op_type = q.op_type;
    item.dtype = q.dtype;
    item.reduce_op = q.reduce_op;
    // CPU or device, not the ordinal: ranks may hold their tensors on
    // different GPUs, and every rank must fuse the same batches.
    item.device = q.device >= 0 ? 0 : kCpuDevice;
    item.process_set_id = q.process_set_id;
    item.prescale_factor = q.prescale_factor;
    item.postscale_factor = q.postscale_factor;
    item.bytes = q.byte_size();
    items_.push_back(item);
    item_response_.push_back(i);
  }
  // (No early return when nothing runs: failed groups still complete below.)
  for (const std::vector<size_t>& batch : plan_fusion(items_, tuning_.fusion_threshold(),
                                                         transport_->unfused_from_bytes())) {
    batch_.clear();
    for (size_t k : batch) batch_.push_back(&responses[item_response_[k]]);
    if (timeline != nullptr) {
      for (Response* r : batch_) {
        if (r->has_entry && r->entry.negotiate_timeline == timeline) {
          timeline->end(row(r->entry.request.name), "QUEUE");
        }
      }
    }
    for (Response* r : batch_) r->entry.negotiate_timeline = nullptr;  // QUEUE ended
    Status ran = run_batch(timeline);
    if (ran_on_ != nullptr && ran_on_->launched()) {
      launch_batch(ran_on_->launched(), ran_on_->streamed(), ran);
    }
    HVD_RETURN_IF_ERROR(ran);
    for (Response* r : batch_) {
      if (r->op().group_id < 0) finish_response(*r, timeline);
    }
  }
  // The members of groups complete together, once all of them ran.
  if (hand_over_groups(responses, Status::ok())) return Status::ok();
  group_done_.clear();
  for (Response& r : responses) {
    if (r.done) continue;
    r.done = true;
    if (!r.has_entry) continue;
    if (timeline != nullptr && r.entry.negotiate_timeline == timeline) {
      timeline->end(row(r.entry.request.name), "QUEUE");
    }
    queue_.finish(r.entry);
    group_done_.push_back({r.entry.handle, r.error, std::move(r.output)});
  }
  if (!group_done_.empty()) handles_.complete_all(group_done_);
  return Status::ok();
}

void SetEngine::launch_batch(const std::shared_ptr<DeviceEvent>& event,
                             transports::StreamedTransport* watched, const Status& failure) {
  DeviceCompletions::Batch batch;
  batch.events.push_back(event);
  if (watched != nullptr) batch.watched.push_back(watched);
  batch.failure = failure;
  batch.timeline = cycle_timeline_;
  for (Response* r : batch_) {
    if (!r->has_entry) continue;  // nothing to complete (a rank that joined)
    const bool ok = failure.is_ok() && r->error.is_ok();
    if (ok) {
      // Its name is free from now: the next op of that name is ordered
      // after this one on the device.
      queue_.finish(r->entry);
      handles_.launch(r->entry.handle, std::move(r->output), event);
      if (cycle_timeline_) cycle_timeline_->begin(device_row(r->entry.request.name), "DEVICE");
    }
    if (r->op().group_id >= 0) {
      // Completes with its group (hand_over_groups), after this event too.
      if (ok) group_launched_.push_back(r->entry.handle);
      if (std::find(group_events_.begin(), group_events_.end(), event) == group_events_.end()) {
        group_events_.push_back(event);
      }
      if (watched != nullptr && std::find(group_watched_.begin(), group_watched_.end(),
                                          watched) == group_watched_.end()) {
        group_watched_.push_back(watched);
      }
      continue;
    }
    r->done = true;
    batch.statuses.push_back(failure.is_ok() ? r->error : failure);
    batch.named.push_back(ok ? 0 : 1);
    batch.entries.push_back(std::move(r->entry));
    if (!ok) batch.timeline.reset();  // its DEVICE span never began
  }
  if (!batch.entries.empty()) completions_.add(std::move(batch));
}

bool SetEngine::hand_over_groups(std::vector<Response>& responses, const Status& failure) {
  if (group_events_.empty()) return false;
  DeviceCompletions::Batch batch;
  batch.events = std::move(group_events_);
  batch.watched = std::move(group_watched_);
  group_events_.clear();
  group_watched_.clear();
  batch.group = true;
  batch.failure = failure;
  batch.timeline = cycle_timeline_;
  for (Response& r : responses) {
    if (r.done || r.op().group_id < 0) continue;
    r.done = true;
    if (!r.has_entry) continue;
    if (cycle_timeline_ && r.entry.negotiate_timeline == cycle_timeline_.get()) {
      cycle_timeline_->end(row(r.entry.request.name), "QUEUE");
    }
    const bool launched = std::find(group_launched_.begin(), group_launched_.end(),
                                    r.entry.handle) != group_launched_.end();
    batch.statuses.push_back(failure.is_ok() ? r.error : failure);
    batch.named.push_back(launched ? 0 : 1);
    batch.entries.push_back(std::move(r.entry));
  }
  group_launched_.clear();
  if (!batch.entries.empty()) completions_.add(std::move(batch));
  return true;
}

void SetEngine::complete_device(DeviceCompletions::Batch& batch) {
  if (batch.timeline) {
    for (const Entry& e : batch.entries) batch.timeline->end(device_row(e.request.name), "DEVICE");
  }
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    if (batch.named[i] != 0) queue_.finish(batch.entries[i]);
  }
  if (!batch.group) {
    for (size_t i = 0; i < batch.entries.size(); ++i) {
      handles_.complete(batch.entries[i].handle, batch.statuses[i]);
    }
    return;
  }
  std::vector<HandleTable::Completion> done;
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    done.push_back({batch.entries[i].handle, batch.statuses[i], {}});
  }
  handles_.complete_all(done);
}

Status SetEngine::run_batch(Timeline* timeline) {
  ran_on_ = nullptr;
  const int device = batch_.front()->op().device;
  if (device < 0) return executor_.run(batch_, timeline, prefix_);
  auto executor = device_.executor(device);
  if (!executor.is_ok()) {
    // No GPU transport here: the batch's ops fail (on every rank alike),
    // the set goes on with its CPU ops.
    for (Response* r : batch_) r->error = executor.status();
    return Status::ok();
  }
  ran_on_ = executor.value();
  return executor.value()->run(batch_, timeline, prefix_);
}

void SetEngine::fail_everything(const Status& status, CyclePlan& plan) {
  queue_.close(status);
  // Group members that ran on a device complete once it drained.
  hand_over_groups(plan.responses, status);
  for (Response& r : plan.responses) {
    if (r.done) continue;
    r.done = true;
    if (r.has_entry) complete(r.entry, status);
  }
  if (plan.join_entry) {
    complete(*plan.join_entry, status);
    plan.join_entry.reset();
  }
  std::vector<Entry> left;
  controller_.take_all(left);
  queue_.drain(left);
  for (Entry& e : left) complete(e, status);
  cycle_timeline_.reset();
}

void SetEngine::fail_transport(const char* what, const Status& status, CyclePlan& plan) {
  Status aborted = abort_reason();
  if (!aborted.is_ok()) {
    spdlog::debug("{}: {} ended by the abort: {}", set_name(options_.process_set_id), what,
                  status.message());
    fail_everything(aborted, plan);
    return;
  }
  // With on_transport_failure the runtime aborts and says why at warning
  // level (one line per recovery); without it this is the report.
  spdlog::log(options_.on_transport_failure ? spdlog::level::info : spdlog::level::err,
              "{}: {} failed, failing every op: {}", set_name(options_.process_set_id), what,
              status.message());
  // First: the other sets' blocked calls end now, not at their timeout.
  if (options_.on_transport_failure) options_.on_transport_failure(status);
  fail_everything(status, plan);
}

}  // namespace hvd::runtime::engine
