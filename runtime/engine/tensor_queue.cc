#include "runtime/engine/tensor_queue.h"

#include <iterator>
#include <utility>

namespace hvd::runtime::engine {

using common::Status;

Status TensorQueue::admit(const Entry& entry) const {
  if (closed_) return closed_status_;
  if (entry.request.op_type == OpType::kJoin) {
    if (join_in_flight_) {
      return {common::StatusCode::kAlreadyExists,
              "a join is already in flight on process set " +
                  std::to_string(entry.request.process_set_id)};
    }
  } else if (in_flight_.count(entry.request.name) != 0) {
    return {common::StatusCode::kAlreadyExists,
            "a tensor named '" + entry.request.name + "' is already in flight"};
  }
  return Status::ok();
}

Status TensorQueue::push(Entry& entry) {
  {
    std::lock_guard lock(mu_);
    HVD_RETURN_IF_ERROR(admit(entry));
    if (entry.request.op_type == OpType::kJoin) {
      join_in_flight_ = true;
    } else {
      in_flight_.insert(entry.request.name);
    }
    queued_.push_back(std::move(entry));
  }
  wake_.notify_one();
  return Status::ok();
}

Status TensorQueue::push_group(std::vector<Entry>& entries) {
  {
    std::lock_guard lock(mu_);
    std::unordered_set<std::string> names;
    for (const Entry& e : entries) {
      HVD_RETURN_IF_ERROR(admit(e));
      if (!names.insert(e.request.name).second) {
        return {common::StatusCode::kAlreadyExists,
                "the group names tensor '" + e.request.name + "' twice"};
      }
    }
    for (Entry& e : entries) {
      in_flight_.insert(e.request.name);
      queued_.push_back(std::move(e));
    }
  }
  wake_.notify_one();
  return Status::ok();
}

void TensorQueue::drain(std::vector<Entry>& out) {
  std::lock_guard lock(mu_);
  if (queued_.empty()) return;
  out.insert(out.end(), std::make_move_iterator(queued_.begin()),
             std::make_move_iterator(queued_.end()));
  queued_.clear();
}

void TensorQueue::finish(const Entry& entry) {
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
  wake_.wait_until(lock, deadline,
                   [&] { return interrupted_ || (wake_on_work && !queued_.empty()); });
}

void TensorQueue::interrupt() {
  {
    std::lock_guard lock(mu_);
    interrupted_ = true;
  }
  wake_.notify_all();
}

}  // namespace hvd::runtime::engine
