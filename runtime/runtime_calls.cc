// Runtime's op entry points (runtime.h): enqueue and enqueue_group, which
// check an hvd_op and hand it to its set's engine, and the blocking calls of
// the C ABI (enqueue + wait + release).
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/arguments.h"
#include "runtime/op_request.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

namespace {

// Keeps every byte count and their sum far from int64 overflow.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;

}  // namespace

Result<int64_t> Runtime::enqueue(const hvd_op& op) {
  auto set = member_set(op.process_set_id);
  if (!set.is_ok()) return set.status();
  const engine::ProcessSet& ps = *set.value();
  auto entry = make_entry(op, ps);
  if (!entry.is_ok()) return entry.status();
  engine::Entry& e = entry.value();
  int64_t handle = handles_.create(ps.id);
  e.handle = handle;
  e.enqueued = engine::Clock::now();
  Status s = ps.engine->enqueue(e);
  if (!s.is_ok()) {
    handles_.discard(handle);
    return s;
  }
  return handle;
}

Status Runtime::enqueue_group(std::span<const hvd_op> ops, int64_t* handles) {
  const auto n = static_cast<int32_t>(ops.size());
  if (handles == nullptr || n < 1) {
    return common::invalid_argument("hvd_enqueue_group: needs n >= 1 ops and room for n handles");
  }
  auto set = member_set(ops[0].process_set_id);
  if (!set.is_ok()) return set.status();
  const engine::ProcessSet& ps = *set.value();
  std::vector<engine::Entry> entries;
  for (int32_t i = 0; i < n; ++i) {
    if (ops[i].process_set_id != ps.id) {
      return common::invalid_argument("hvd_enqueue_group: every op of a group must be on the same "
                                      "process set (op 0 is on " + std::to_string(ps.id) +
                                      ", op " + std::to_string(i) + " on " +
                                      std::to_string(ops[i].process_set_id) + ")");
    }
    if (ops[i].op_type == HVD_OPTYPE_JOIN || ops[i].op_type == HVD_OPTYPE_BARRIER) {
      return common::invalid_argument("hvd_enqueue_group: join and barrier cannot be grouped");
    }
    auto entry = make_entry(ops[i], ps);
    if (!entry.is_ok()) {
      return entry.status().with_context("hvd_enqueue_group: op " + std::to_string(i));
    }
    entries.push_back(std::move(entry).value());
  }
  const auto now = engine::Clock::now();
  for (engine::Entry& e : entries) {
    e.handle = handles_.create(ps.id);
    e.enqueued = now;
  }
  std::vector<int64_t> ids;
  for (const engine::Entry& e : entries) ids.push_back(e.handle);
  Status s = ps.engine->enqueue_group(entries);
  if (!s.is_ok()) {
    for (int64_t id : ids) handles_.discard(id);
    return s;
  }
  std::copy(ids.begin(), ids.end(), handles);
  return Status::ok();
}

Status Runtime::run(const hvd_op& op) {
  auto handle = enqueue(op);
  if (!handle.is_ok()) return handle.status();
  Status s = handles_.wait(handle.value(), std::nullopt);
  (void)handles_.release(handle.value());
  return s;
}

Status Runtime::allreduce(void* data, int64_t count, int32_t dtype, int32_t op_code) {
  hvd_op op = blank_op(HVD_OPTYPE_ALLREDUCE);
  op.input = data;
  op.output = data;
  op.shape = &count;
  op.ndim = 1;
  op.dtype = dtype;
  op.reduce_op = op_code;
  return run(op);
}

Status Runtime::broadcast(void* data, int64_t count, int32_t dtype, int root) {
  hvd_op op = blank_op(HVD_OPTYPE_BROADCAST);
  op.input = data;
  op.output = data;
  op.shape = &count;
  op.ndim = 1;
  op.dtype = dtype;
  op.root_rank = root;
  return run(op);
}

Status Runtime::allgather(const void* in, int64_t count, int32_t dtype, void* out,
                          const int64_t* counts) {
  auto type = to_data_type(dtype, "allgather");
  if (!type.is_ok()) return type.status();
  auto in_bytes = byte_size(in, count, type.value(), "allgather", "input");
  if (!in_bytes.is_ok()) return in_bytes.status();
  int64_t total = 0;
  for (int r = 0; r < world_.size; ++r) {
    int64_t n = counts != nullptr ? counts[r] : count;
    if (n < 0 || n > kMaxElements / world_.size) {
      return common::invalid_argument("allgather: counts[" + std::to_string(r) + "] (" +
                                      std::to_string(n) + ") is negative or too large");
    }
    total += n;
  }
  if (counts != nullptr && counts[world_.rank] != count) {
    return common::invalid_argument("allgather: counts[" + std::to_string(world_.rank) + "] is " +
                                    std::to_string(counts[world_.rank]) +
                                    " but this rank contributes " + std::to_string(count));
  }
  auto out_bytes = byte_size(out, total, type.value(), "allgather", "output");
  if (!out_bytes.is_ok()) return out_bytes.status();

  hvd_op op = blank_op(HVD_OPTYPE_ALLGATHER);
  op.input = in;
  op.shape = &count;
  op.ndim = 1;
  op.dtype = dtype;
  auto handle = enqueue(op);
  if (!handle.is_ok()) return handle.status();
  Status s = handles_.wait(handle.value(), std::nullopt);
  if (s.is_ok()) {
    s = handles_.inspect(handle.value(), [&](const engine::FinishedOp& done) -> Status {
      if (done.output.bytes != out_bytes.value()) {
        return common::invalid_argument(
            "allgather: the ranks contributed " +
            std::to_string(done.output.bytes / common::data_type_size(type.value())) +
            " elements in all, but the counts given add up to " + std::to_string(total));
      }
      if (done.output.bytes > 0) std::memcpy(out, done.output.data.get(), done.output.bytes);
      return Status::ok();
    });
  }
  (void)handles_.release(handle.value());
  return s;
}

Status Runtime::barrier() { return run(blank_op(HVD_OPTYPE_BARRIER)); }

}  // namespace hvd::runtime
