#include "runtime/engine/tensor_queue.h"

#include <algorithm>
#include <iterator>
#include <thread>
#include <utility>

namespace hvd::runtime::engine {

using common::Status;

namespace {

// FNV-1a over the sorted member names: the same group id on every rank,
// whatever order the ranks enqueue their groups in.
int32_t group_id_of(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  uint64_t h = 1469598103934665603ull;
  for (const std::string& name : names) {
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;  // separator
  }
  return static_cast<int32_t>(h & 0x7fffffffu);
}

bool wants_name(const Entry& e) {
  return e.request.name.empty() && e.request.op_type != OpType::kJoin;
}

}  // namespace

std::string TensorQueue::auto_name(OpType type, int64_t skip) const {
  int64_t n = auto_names_[static_cast<size_t>(type)] + skip;
  std::string name = std::string(op_type_name(type)) + ".noname.";
  if (name_generation_ > 0) name += std::to_string(name_generation_) + ".";
  return name + std::to_string(n);
}

void TensorQueue::restart_names(int64_t generation) {
  std::lock_guard lock(mu_);
  name_generation_ = generation;
  auto_names_.fill(0);
}

Status TensorQueue::admit(const Request& request, const std::string& name) const {
  if (closed_) return closed_status_;
  if (request.op_type == OpType::kJoin) {
    if (join_in_flight_) {
      return {common::StatusCode::kAlreadyExists,
              "a join is already in flight on process set " +
                  std::to_string(request.process_set_id)};
    }
  } else if (join_in_flight_) {
    return common::failed_precondition(
        "cannot run " + std::string(op_type_name(request.op_type)) +
        (request.name.empty() ? std::string() : " '" + request.name + "'") +
        ": join() is pending on this rank (ops enqueued after join() fail until it completes)");
  } else if (in_flight_.count(name) != 0) {
    return {common::StatusCode::kAlreadyExists, "a tensor named '" + name + "' is already in flight"};
  }
  return Status::ok();
}

Status TensorQueue::push(Entry& entry) {
  {
    std::lock_guard lock(mu_);
    const bool named_here = wants_name(entry);
    std::string name = named_here ? auto_name(entry.request.op_type, 0) : entry.request.name;
    HVD_RETURN_IF_ERROR(admit(entry.request, name));
    if (named_here) {
      entry.request.name = std::move(name);
      ++auto_names_[static_cast<size_t>(entry.request.op_type)];
    }
    if (entry.request.op_type == OpType::kJoin) {
      join_in_flight_ = true;
    } else {
      in_flight_.insert(entry.request.name);
    }
    queued_.push_back(std::move(entry));
    if (!note_push()) return Status::ok();
  }
  wake_.notify_one();
  return Status::ok();
}

Status TensorQueue::push_group(std::vector<Entry>& entries) {
  {
    std::lock_guard lock(mu_);
    std::array<int64_t, 7> taken{};  // numbers this group takes, per op type
    std::vector<std::string> names;
    for (const Entry& e : entries) {
      const auto type = static_cast<size_t>(e.request.op_type);
      names.push_back(wants_name(e) ? auto_name(e.request.op_type, taken[type]++)
                                    : e.request.name);
    }
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < entries.size(); ++i) {
      HVD_RETURN_IF_ERROR(admit(entries[i].request, names[i]));
      if (!seen.insert(names[i]).second) {
        return {common::StatusCode::kAlreadyExists,
                "the group names tensor '" + names[i] + "' twice"};
      }
    }
    for (size_t t = 0; t < taken.size(); ++t) auto_names_[t] += taken[t];
    const int32_t group = group_id_of(names);
    for (size_t i = 0; i < entries.size(); ++i) {
      Entry& e = entries[i];
      e.request.name = std::move(names[i]);
      e.request.group_id = group;
      e.request.group_size = static_cast<int32_t>(entries.size());
      in_flight_.insert(e.request.name);
      queued_.push_back(std::move(e));
    }
    if (!note_push()) return Status::ok();
  }
  wake_.notify_one();
  return Status::ok();
}

bool TensorQueue::note_push() {
  last_push_ = Clock::now();
  if (first_push_ == Clock::time_point{}) first_push_ = last_push_;
  return waiting_for_work_;
}

void TensorQueue::drain(std::vector<Entry>& out) {
  std::lock_guard lock(mu_);
  if (queued_.empty()) return;
  out.insert(out.end(), std::make_move_iterator(queued_.begin()),
             std::make_move_iterator(queued_.end()));
  queued_.clear();
  first_push_ = {};
}

void TensorQueue::finish(const Entry& entry) {
  if (counters_ != nullptr) {
    const bool timed = entry.request.op_type == OpType::kAllreduce &&
                       entry.enqueued != Clock::time_point{};
    counters_->record(static_cast<int32_t>(entry.request.op_type), entry.request.byte_size(),
                      timed ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  Clock::now() - entry.enqueued)
                            : std::chrono::nanoseconds(-1));
  }
  std::lock_guard lock(mu_);
  if (entry.request.op_type == OpType::kJoin) {
    join_in_flight_ = false;
  } else {
    in_flight_.erase(entry.request.name);
  }
}

void TensorQueue::close(Status reason) {
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  closed_status_ = std::move(reason);
}

bool TensorQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void TensorQueue::wait(Clock::time_point deadline, bool wake_on_work) {
  std::unique_lock lock(mu_);
  if (wake_on_work) {
    // Spin (yielding) a little before sleeping: the next op often comes
    // within microseconds (a training step's burst, a blocking loop), and
    // waking a sleeping engine costs every push a futex wake and the
    // engine a context switch, more than a small op itself.
    const Clock::time_point spin_until = std::min(deadline, Clock::now() + kIdleSpin);
    while (!interrupted_ && queued_.empty() && Clock::now() < spin_until) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
  }
  waiting_for_work_ = wake_on_work;
  wake_.wait_until(lock, deadline,
                   [&] { return interrupted_ || (wake_on_work && !queued_.empty()); });
  waiting_for_work_ = false;
}

void TensorQueue::wait_quiet(Clock::duration quiet, Clock::duration longest) {
  // Timed sleeps overshoot by the kernel's timer slack (50 us by default),
  // more than a short window lasts: below this, yield the core instead (to
  // the thread that is pushing, when it shares it) and look again.
  constexpr Clock::duration kShortest = std::chrono::microseconds(200);
  std::unique_lock lock(mu_);
  while (!interrupted_ && !queued_.empty()) {
    const Clock::time_point until = std::min(last_push_ + quiet, first_push_ + longest);
    const Clock::time_point now = Clock::now();
    if (now >= until) return;
    if (until - now >= kShortest) {
      wake_.wait_until(lock, until);  // pushes do not notify: this re-reads last_push_
    } else {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
  }
}

bool TensorQueue::has_work() const {
  std::lock_guard lock(mu_);
  return !queued_.empty();
}

void TensorQueue::interrupt() {
  {
    std::lock_guard lock(mu_);
    interrupted_ = true;
  }
  wake_.notify_all();
}

}  // namespace hvd::runtime::engine
