#include "runtime/runtime.h"

#include <unistd.h>

#include <chrono>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "runtime/arguments.h"
#include "runtime/scale.h"
#include "transports/registry.h"

namespace hvd::runtime {

namespace {

using common::DataType;
using common::ReduceOp;

// Keeps every byte count and their sum far from int64 overflow.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;

std::chrono::milliseconds seconds_setting(const config::Settings& settings, const char* key) {
  return std::chrono::seconds(settings.get_int(key));
}

}  // namespace

Runtime::Runtime(WorldInfo world, config::Settings settings)
    : world_(std::move(world)), settings_(std::move(settings)) {}

Runtime::~Runtime() {
  cpu_.reset();
  rendezvous_.reset();
  spdlog::debug("left the world (epoch {})", epoch_);
}

Result<std::unique_ptr<Runtime>> Runtime::init(const EnvLookup& lookup) {
  auto world = read_world(lookup);
  if (!world.is_ok()) return world.status();
  config::Settings settings;
  HVD_RETURN_IF_ERROR(settings.apply_environment(lookup));
  auto level = common::parse_log_level(settings.get("log_level"));
  if (!level.is_ok()) return level.status();
  std::string prefix = std::to_string(world->rank) + "@" + world->hostname;
  common::init_logging(prefix, level.value());

  std::unique_ptr<Runtime> runtime(new Runtime(std::move(world).value(), std::move(settings)));
  HVD_RETURN_IF_ERROR(runtime->start());
  return runtime;
}

Status Runtime::start() {
  if (world_.has_rendezvous()) {
    rendezvous_ = std::make_unique<RendezvousClient>(
        world_.rendezvous_addr, world_.job_token, seconds_setting(settings_, "transport_timeout"));
    spdlog::debug("joining rank {} of {} at {}", world_.rank, world_.size, world_.rendezvous_addr);
    auto joined = rendezvous_->join(world_.rank, world_.size, world_.hostname, getpid(),
                                    seconds_setting(settings_, "start_timeout"));
    if (!joined.is_ok()) return joined.status();
    if (joined->rank != world_.rank || joined->size != world_.size) {
      return common::failed_precondition(
          "the rendezvous at " + world_.rendezvous_addr + " placed this worker as rank " +
          std::to_string(joined->rank) + " of " + std::to_string(joined->size) +
          " but its environment says rank " + std::to_string(world_.rank) + " of " +
          std::to_string(world_.size));
    }
    epoch_ = joined->epoch;
  }

  transports::TransportContext context;
  context.rank = world_.rank;
  context.size = world_.size;
  context.store = rendezvous_.get();
  context.key_prefix = "epoch" + std::to_string(epoch_) + "/cpu/";
  context.bind_address = world_.bind_address;
  context.timeout = seconds_setting(settings_, "transport_timeout");
  auto cpu = transports::TransportRegistry::with_builtins().create(settings_.get("cpu_transport"),
                                                                   context);
  if (!cpu.is_ok()) return cpu.status();
  cpu_ = std::move(cpu).value();
  spdlog::info("rank {} of {} (local {}/{}, cross {}/{}) ready, epoch {}, cpu transport {}",
               world_.rank, world_.size, world_.local_rank, world_.local_size, world_.cross_rank,
               world_.cross_size, epoch_, cpu_->name());
  return Status::ok();
}

Status Runtime::allreduce(void* data, int64_t count, int32_t dtype, int32_t op_code) {
  auto type = to_data_type(dtype, "allreduce");
  if (!type.is_ok()) return type.status();
  auto op = to_reduce_op(op_code, "allreduce");
  if (!op.is_ok()) return op.status();
  auto bytes = byte_size(data, count, type.value(), "allreduce", "data");
  if (!bytes.is_ok()) return bytes.status();
  bool average = op.value() == ReduceOp::kAverage;
  if (average && type.value() == DataType::kBool) {
    return common::invalid_argument("allreduce: average is not defined for bool");
  }

  std::lock_guard lock(mu_);
  HVD_RETURN_IF_ERROR(cpu_->allreduce({data, bytes.value()}, type.value(),
                                      average ? ReduceOp::kSum : op.value()));
  if (!average) return Status::ok();
  // Sum, then divide by the world size; integers truncate toward zero (scale.h).
  return divide(data, static_cast<size_t>(count), type.value(), world_.size);
}

Status Runtime::broadcast(void* data, int64_t count, int32_t dtype, int root) {
  auto type = to_data_type(dtype, "broadcast");
  if (!type.is_ok()) return type.status();
  auto bytes = byte_size(data, count, type.value(), "broadcast", "data");
  if (!bytes.is_ok()) return bytes.status();
  HVD_RETURN_IF_ERROR(check_root(root, world_.size, "broadcast"));
  std::lock_guard lock(mu_);
  return cpu_->broadcast({data, bytes.value()}, root);
}

Status Runtime::allgather(const void* in, int64_t count, int32_t dtype, void* out,
                          const int64_t* counts) {
  auto type = to_data_type(dtype, "allgather");
  if (!type.is_ok()) return type.status();
  auto in_bytes = byte_size(in, count, type.value(), "allgather", "input");
  if (!in_bytes.is_ok()) return in_bytes.status();
  size_t element = common::data_type_size(type.value());
  std::vector<int64_t> byte_counts(static_cast<size_t>(world_.size));
  int64_t total = 0;
  for (int r = 0; r < world_.size; ++r) {
    int64_t n = counts != nullptr ? counts[r] : count;
    if (n < 0 || n > kMaxElements / world_.size) {
      return common::invalid_argument("allgather: counts[" + std::to_string(r) + "] (" +
                                      std::to_string(n) + ") is negative or too large");
    }
    byte_counts[static_cast<size_t>(r)] = n * static_cast<int64_t>(element);
    total += n;
  }
  if (counts != nullptr && counts[world_.rank] != count) {
    return common::invalid_argument("allgather: counts[" + std::to_string(world_.rank) + "] is " +
                                    std::to_string(counts[world_.rank]) +
                                    " but this rank contributes " + std::to_string(count));
  }
  auto out_bytes = byte_size(out, total, type.value(), "allgather", "output");
  if (!out_bytes.is_ok()) return out_bytes.status();
  std::lock_guard lock(mu_);
  return cpu_->allgatherv({in, in_bytes.value()}, {out, out_bytes.value()}, byte_counts);
}

Status Runtime::barrier() {
  std::lock_guard lock(mu_);
  return cpu_->barrier();
}

}  // namespace hvd::runtime
