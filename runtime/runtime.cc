#include "runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "runtime/arguments.h"
#include "runtime/engine/agreement.h"
#include "runtime/discovery/layout_exchange.h"
#include "runtime/op_request.h"
#include "transports/registry.h"

namespace hvd::runtime {

namespace {

using common::DataType;

// Keeps every byte count and their sum far from int64 overflow.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;

std::chrono::milliseconds seconds_setting(const config::Settings& settings, const char* key) {
  return std::chrono::seconds(settings.get_int(key));
}

hvd_op blank_op(int32_t type) {
  hvd_op op{};
  op.op_type = type;
  op.device = HVD_DEVICE_CPU;
  op.process_set_id = HVD_GLOBAL_PROCESS_SET;
  return op;
}

}  // namespace

Runtime::Runtime(WorldInfo world, config::Settings settings, int64_t first_handle)
    : world_(std::move(world)), settings_(std::move(settings)), handles_(first_handle) {}

Runtime::~Runtime() {
  shutdown();
  spdlog::debug("left the world (epoch {})", epoch_);
}

Result<std::unique_ptr<Runtime>> Runtime::init(const EnvLookup& lookup, int64_t first_handle,
                                               int64_t generation) {
  auto world = read_world(lookup);
  if (!world.is_ok()) return world.status();
  config::Settings settings;
  HVD_RETURN_IF_ERROR(settings.apply_environment(lookup));
  auto level = common::parse_log_level(settings.get("log_level"));
  if (!level.is_ok()) return level.status();
  std::string prefix = std::to_string(world->rank) + "@" + world->hostname;
  common::init_logging(prefix, level.value());

  std::unique_ptr<Runtime> runtime(
      new Runtime(std::move(world).value(), std::move(settings), first_handle));
  HVD_RETURN_IF_ERROR(runtime->start(generation));
  return runtime;
}

Result<std::unique_ptr<transports::Transport>> Runtime::connect(const std::string& key_prefix,
                                                                int rank, int size) const {
  transports::TransportContext context;
  context.rank = rank;
  context.size = size;
  context.store = rendezvous_.get();
  context.key_prefix = key_prefix;
  context.bind_address = world_.bind_address;
  context.timeout = seconds_setting(settings_, "transport_timeout");
  return transports::TransportRegistry::with_builtins().create(settings_.get("cpu_transport"),
                                                               context);
}

std::shared_ptr<engine::SetEngine> Runtime::make_engine(
    int32_t id, const std::vector<int>& ranks, int rank,
    std::unique_ptr<transports::Transport> transport) {
  engine::SetEngineOptions o;
  o.process_set_id = id;
  o.rank = rank;
  o.global_ranks = ranks;
  o.cycle_time_ms = settings_.get_double("cycle_time_ms");
  o.fusion_threshold = settings_.get_int("fusion_threshold");
  o.cache_capacity = static_cast<size_t>(settings_.get_int("cache_capacity"));
  o.stall_warning = std::chrono::seconds(settings_.get_int("stall_check_warning_time_seconds"));
  o.stall_shutdown = std::chrono::seconds(settings_.get_int("stall_check_shutdown_time_seconds"));
  o.no_progress = std::chrono::seconds(settings_.get_int("stall_check_no_progress_seconds"));
  return std::make_shared<engine::SetEngine>(std::move(o), std::move(transport), handles_,
                                             &timeline_);
}

Status Runtime::join() {
  const auto start_timeout = seconds_setting(settings_, "start_timeout");
  auto join_timeout = start_timeout;
  if (world_.foreign()) {
    auto job = ForeignJob::start(world_);
    if (!job.is_ok()) return job.status();
    foreign_ = std::move(job).value();
    rendezvous_ = std::make_unique<RendezvousClient>(
        world_.rendezvous_addr, world_.job_token, seconds_setting(settings_, "transport_timeout"),
        ForeignJob::kReconnectBackoff);
    auto left = foreign_->reach(*rendezvous_, start_timeout);
    if (!left.is_ok()) return left.status();
    join_timeout = left.value();
  } else {
    rendezvous_ = std::make_unique<RendezvousClient>(
        world_.rendezvous_addr, world_.job_token, seconds_setting(settings_, "transport_timeout"));
  }
  spdlog::debug("joining rank {} of {} at {}", world_.rank, world_.size, world_.rendezvous_addr);
  auto joined = rendezvous_->join(world_.rank, world_.size, world_.hostname, getpid(),
                                  join_timeout);
  if (!joined.is_ok()) return joined.status();
  joined_ = true;
  if (joined->rank != world_.rank || joined->size != world_.size) {
    return common::failed_precondition(
        "the rendezvous at " + world_.rendezvous_addr + " placed this worker as rank " +
        std::to_string(joined->rank) + " of " + std::to_string(joined->size) +
        " but its environment says rank " + std::to_string(world_.rank) + " of " +
        std::to_string(world_.size));
  }
  epoch_ = joined->epoch;
  const auto liveness = seconds_setting(settings_, "heartbeat_timeout_seconds");
  if (liveness.count() > 0) {
    heartbeat_ = std::make_unique<Heartbeat>(*rendezvous_, world_.rank, epoch_,
                                             Heartbeat::interval_for(liveness));
  }
  if (world_.cross_from_peers) {
    HVD_RETURN_IF_ERROR(exchange_cross_ranks(*rendezvous_,
                                             "epoch" + std::to_string(epoch_) + "/local_rank/",
                                             &world_, seconds_setting(settings_, "transport_timeout")));
  }
  return Status::ok();
}

Status Runtime::start(int64_t generation) {
  if (world_.has_rendezvous()) HVD_RETURN_IF_ERROR(join());

  auto cpu = connect("epoch" + std::to_string(epoch_) + "/cpu/", world_.rank, world_.size);
  if (!cpu.is_ok()) return cpu.status();
  std::string transport_name(cpu.value()->name());

  auto global = std::make_shared<engine::ProcessSet>();
  global->id = HVD_GLOBAL_PROCESS_SET;
  for (int r = 0; r < world_.size; ++r) global->ranks.push_back(r);
  global->rank = world_.rank;
  global->engine = make_engine(global->id, global->ranks, global->rank, std::move(cpu).value());
  sets_.add(std::move(global));

  if (std::string path = settings_.get("timeline_filename"); !path.empty()) {
    if (generation > 0) path += "." + std::to_string(generation);
    HVD_RETURN_IF_ERROR(start_timeline(path));
  }
  spdlog::info("rank {} of {} (local {}/{}, cross {}/{}) ready, epoch {}, cpu transport {}",
               world_.rank, world_.size, world_.local_rank, world_.local_size, world_.cross_rank,
               world_.cross_size, epoch_, transport_name);
  started_ = true;
  return Status::ok();
}

void Runtime::shutdown() {
  std::lock_guard lock(shutdown_mu_);
  if (shut_down_.exchange(true)) return;
  auto sets = sets_.take_all();
  // Process sets first, the global set last: each stop is collective over
  // the set's members, and every rank stops them in the same order.
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
    if ((*it)->engine) (*it)->engine->stop(common::aborted("hvd is shutting down"));
  }
  sets.clear();
  timeline_.exchange(nullptr);
  if (heartbeat_) {
    heartbeat_->stop();  // says this rank leaves: no longer watched
    heartbeat_.reset();
  }
  if (foreign_) {
    foreign_->finish(joined_, started_);
    foreign_.reset();
  }
  rendezvous_.reset();
}

Result<std::shared_ptr<const engine::ProcessSet>> Runtime::process_set(int32_t id) const {
  auto set = sets_.find(id);
  if (!set) {
    if (shut_down_) return common::aborted("hvd is shutting down");
    return common::not_found("no process set " + std::to_string(id));
  }
  return set;
}

Result<std::shared_ptr<const engine::ProcessSet>> Runtime::member_set(int32_t id) const {
  auto set = process_set(id);
  if (!set.is_ok()) return set;
  if (set.value()->rank < 0) {
    std::vector<int64_t> ranks(set.value()->ranks.begin(), set.value()->ranks.end());
    return common::invalid_argument("rank " + std::to_string(world_.rank) +
                                    " is not a member of process set " + std::to_string(id) +
                                    " (ranks " + engine::shape_string(ranks) + ")");
  }
  return set;
}

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

Status Runtime::enqueue_group(const hvd_op* ops, int32_t n, int64_t* handles) {
  if (ops == nullptr || handles == nullptr || n < 1) {
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
    auto transport = connect("epoch" + std::to_string(epoch_) + "/ps" + std::to_string(id) + "/",
                             set->rank, set->size());
    if (!transport.is_ok()) {
      return transport.status().with_context("hvd_add_process_set: process set " +
                                             std::to_string(id));
    }
    set->engine = make_engine(id, members, set->rank, std::move(transport).value());
  }
  std::shared_ptr<engine::SetEngine> engine = set->engine;
  if (!sets_.add(std::move(set))) {
    if (engine) engine->stop(common::aborted("hvd is shutting down"));
    return common::aborted("hvd is shutting down");
  }
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

Status Runtime::start_timeline(const std::string& path) {
  if (path.empty()) return common::invalid_argument("hvd_start_timeline: the path is empty");
  if (world_.rank != 0) return Status::ok();  // rank 0 writes the job's timeline
  auto timeline = engine::Timeline::open(path, world_.rank);
  if (!timeline.is_ok()) return timeline.status();
  timeline_.exchange(std::shared_ptr<engine::Timeline>(std::move(timeline).value()));
  return Status::ok();
}

Status Runtime::stop_timeline() {
  std::shared_ptr<engine::Timeline> last = timeline_.exchange(nullptr);
  if (!last) return Status::ok();
  // An engine cycle may still hold it (recording the end of an op whose
  // handle already completed). The file must be whole when this returns, so
  // wait for those cycles (bounded: a cycle never takes this long unless a
  // transport is stuck, and then the last cycle closes the file).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (last.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (last.use_count() > 1) {
    spdlog::warn("hvd_stop_timeline: an engine cycle still writes the timeline after 10 s; "
                 "the file is closed when it ends");
  }
  last.reset();  // the last user closes the file
  return Status::ok();
}

Result<engine::EngineStats> Runtime::stats(int32_t set_id) const {
  auto set = member_set(set_id);
  if (!set.is_ok()) return set.status();
  return set.value()->engine->stats();
}

}  // namespace hvd::runtime
