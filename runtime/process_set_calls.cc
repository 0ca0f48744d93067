// Runtime's process-set calls (runtime.h): add and remove are collective
// over every rank; agree() first checks, with one allgather over the global
// set, that every rank made the same call, so that all of them fail or
// succeed alike.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/logging.h"
#include "daemon/rendezvous/round_keys.h"
#include "runtime/engine/agreement.h"
#include "runtime/op_request.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

Status Runtime::agree(const char* call, std::vector<int64_t> description) {
  // Each rank contributes [length, description...]; the rows come back in
  // rank order, so every rank can compare everyone's call with its own.
  description.insert(description.begin(), static_cast<int64_t>(description.size()) + 1);
  hvd_op op = blank_op(HVD_OPTYPE_ALLGATHER);
  std::string name = "hvd.process_set_call." + std::to_string(process_set_calls_++);
  op.name = name.c_str();
  op.input = description.data();
  int64_t rows = static_cast<int64_t>(description.size());
  op.shape = &rows;
  op.ndim = 1;
  op.dtype = HVD_INT64;
  auto handle = enqueue(op);
  if (!handle.is_ok()) return handle.status();
  Status s = handles_.wait(handle.value(), std::nullopt);
  std::vector<int64_t> all;
  if (s.is_ok()) {
    s = handles_.inspect(handle.value(), [&](const engine::FinishedOp& done) {
      all.resize(done.output.bytes / sizeof(int64_t));
      if (!all.empty()) std::memcpy(all.data(), done.output.data.get(), done.output.bytes);
      return Status::ok();
    });
  }
  (void)handles_.release(handle.value());
  HVD_RETURN_IF_ERROR(s);
  std::string differences;
  bool differ = false;
  size_t at = 0;
  for (int r = 0; r < world_.size && at < all.size(); ++r) {
    auto length = static_cast<size_t>(std::max<int64_t>(all[at], 1));
    std::vector<int64_t> theirs(all.begin() + static_cast<std::ptrdiff_t>(at + 1),
                                all.begin() + static_cast<std::ptrdiff_t>(std::min(at + length, all.size())));
    differ = differ || theirs != std::vector<int64_t>(description.begin() + 1, description.end());
    differences += (r > 0 ? ", rank " : "rank ") + std::to_string(r) + " " +
                   engine::shape_string(theirs);
    at += length;
  }
  if (!differ) return Status::ok();
  return common::invalid_argument(std::string(call) +
                                  ": the ranks made different calls (op, id, ranks): " +
                                  differences);
}

Result<int32_t> Runtime::add_process_set(std::span<const int32_t> ranks) {
  std::lock_guard lock(process_set_mu_);
  std::vector<int> members(ranks.begin(), ranks.end());
  std::sort(members.begin(), members.end());
  // Agree first, check after: every rank then fails (or succeeds) alike.
  const int32_t id = next_set_id_;
  std::vector<int64_t> description{1, id};
  description.insert(description.end(), members.begin(), members.end());
  HVD_RETURN_IF_ERROR(agree("hvd_add_process_set", std::move(description)));
  if (members.empty()) return common::invalid_argument("hvd_add_process_set: no ranks given");
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= world_.size) {
      return common::invalid_argument("hvd_add_process_set: rank " + std::to_string(members[i]) +
                                      " is out of range for a world of size " +
                                      std::to_string(world_.size));
    }
    if (i > 0 && members[i] == members[i - 1]) {
      return common::invalid_argument("hvd_add_process_set: rank " + std::to_string(members[i]) +
                                      " is given twice");
    }
  }
  ++next_set_id_;

  auto set = std::make_shared<engine::ProcessSet>();
  set->id = id;
  set->ranks = members;
  auto me = std::find(members.begin(), members.end(), world_.rank);
  set->rank = me == members.end() ? -1 : static_cast<int>(me - members.begin());
  if (set->rank >= 0) {
    const std::string key_prefix =
        daemon::round_key_prefix(round_) + "ps" + std::to_string(id) + "/";
    auto transport = connect(key_prefix, set->rank, set->size());
    if (!transport.is_ok()) {
      return transport.status().with_context("hvd_add_process_set: process set " +
                                             std::to_string(id));
    }
    set->engine = make_engine(id, members, set->rank, key_prefix, std::move(transport).value());
  }
  std::shared_ptr<engine::SetEngine> engine = set->engine;
  if (!sets_.add(std::move(set))) {
    if (engine) engine->stop(common::aborted("hvd is shutting down"));
    return common::aborted("hvd is shutting down");
  }
  if (engine && abort_.aborted()) engine->abort(abort_.reason());  // raced Runtime::abort
  spdlog::debug("process set {} added: {} ranks", id, members.size());
  return id;
}

Status Runtime::remove_process_set(int32_t id) {
  std::lock_guard lock(process_set_mu_);
  if (id == HVD_GLOBAL_PROCESS_SET) {
    return common::invalid_argument("hvd_remove_process_set: the global process set (0) cannot "
                                    "be removed");
  }
  HVD_RETURN_IF_ERROR(agree("hvd_remove_process_set", {2, id}));
  auto set = process_set(id);
  if (!set.is_ok()) return set.status().with_context("hvd_remove_process_set");
  auto removed = sets_.remove(id);
  if (removed && removed->engine) {
    removed->engine->stop(
        common::aborted("process set " + std::to_string(id) + " was removed"));
  }
  return Status::ok();
}

}  // namespace hvd::runtime
