#include "transports/shm/shm_transport.h"

#include <spdlog/spdlog.h>

#include <string>

#include "transports/argument_checks.h"
#include "transports/reduce_functions.h"
#include "transports/shm/factory.h"
#include "transports/shm/segment_rendezvous.h"

namespace hvd::transports::shm {

namespace {

std::byte* bytes(void* data) { return static_cast<std::byte*>(data); }
const std::byte* bytes(const void* data) { return static_cast<const std::byte*>(data); }

}  // namespace

ShmTransport::ShmTransport(int rank, int size, std::chrono::milliseconds timeout, Segment segment)
    : rank_(rank),
      size_(size),
      segment_(std::move(segment)),
      waiter_(segment_, rank, timeout),
      collectives_(segment_, waiter_, rank) {}

ShmTransport::~ShmTransport() { waiter_.leave(); }

Result<std::unique_ptr<Transport>> ShmTransport::connect(const TransportContext& ctx) {
  HVD_RETURN_IF_ERROR(check_context(kName, ctx));
  auto segment = join_segment(ctx, kStagingBytes);
  if (!segment.is_ok()) return segment.status();
  spdlog::debug("shm transport: {} attached (key prefix '{}', {} MiB segment)", where(ctx.rank, ctx.size),
                ctx.key_prefix, segment.value().header().total_bytes >> 20);
  std::unique_ptr<ShmTransport> transport(
      new ShmTransport(ctx.rank, ctx.size, ctx.timeout, std::move(segment).value()));
  Status agreed = transport->collectives_.agree_on_cross_memory();
  if (!agreed.is_ok()) {
    return transport->fail(agreed.with_context("shm transport: " + where(ctx.rank, ctx.size) +
                                               " agreeing on cross-memory attach"));
  }
  const CrossMemory& cross = transport->collectives_.cross_memory();
  if (ctx.size > 1 && cross.enabled()) {
    spdlog::debug("shm transport: {} reads its peers' alltoallv bytes directly (process_vm_readv) from {} KiB",
                  where(ctx.rank, ctx.size), kCrossMemoryMinBytes >> 10);
  } else if (ctx.size > 1) {
    spdlog::debug("shm transport: {} stages all data, no cross-memory attach: {}", where(ctx.rank, ctx.size),
                  cross.why());
  }
  return std::unique_ptr<Transport>(std::move(transport));
}

std::string_view ShmTransport::name() const { return kName; }

std::vector<Tunable> ShmTransport::tunables() const {
  return {Tunable{"chunk_bytes", static_cast<int64_t>(collectives_.chunk_bytes()),
                  static_cast<int64_t>(kMinChunkBytes),
                  static_cast<int64_t>(segment_.staging_bytes())}};
}

Status ShmTransport::set_tunable(std::string_view tunable, int64_t value) {
  if (tunable != "chunk_bytes") return Transport::set_tunable(tunable, value);
  const auto max = static_cast<int64_t>(segment_.staging_bytes());
  if (value < static_cast<int64_t>(kMinChunkBytes) || value > max || value % 64 != 0) {
    return common::invalid_argument("shm transport: chunk_bytes " + std::to_string(value) +
                                    " is not a multiple of 64 from " +
                                    std::to_string(kMinChunkBytes) + " to " + std::to_string(max));
  }
  collectives_.set_chunk_bytes(static_cast<size_t>(value));
  return Status::ok();
}

Status ShmTransport::outcome(std::string_view op, Status s) {
  if (s.is_ok()) return s;
  if (waiter_.interrupted()) {
    waiter_.leave();  // (abort() does too) before the caller may free what peers read by CMA
    return s;         // TransportBase returns the abort's Status
  }
  return failed(op, s);
}

Status ShmTransport::check_reduction(Reduction /*collective*/, DataType type, ReduceOp op) const {
  return reduce_function(kName, type, op).status();
}

void ShmTransport::on_failure(const Status& error) {
  // The caller gets the error and reports it (hvd's engine: one warning,
  // Runtime::abort's, that names this failure): details here.
  spdlog::info("{}", error.message());
  waiter_.leave(error.code());
}

void ShmTransport::on_abort(const Status& /*reason*/, const Status& aborted) {
  // Whoever aborts says why at warning level (Runtime::abort): details here.
  spdlog::info("{}", aborted.message());
  waiter_.interrupt();
  waiter_.leave();
}

Status ShmTransport::do_allreduce(Buffer data, DataType type, ReduceOp op) {
  auto fn = reduce_function(kName, type, op);  // check_reduction found it
  return outcome("allreduce", collectives_.allreduce(bytes(data.data), data.size,
                                                     common::data_type_size(type), fn.value(),
                                                     type == DataType::kBool));
}

Status ShmTransport::do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) {
  return outcome("allgatherv", collectives_.allgatherv(bytes(in.data), bytes(out.data), counts));
}

Status ShmTransport::do_broadcast(Buffer data, int root) {
  return outcome("broadcast", collectives_.broadcast(bytes(data.data), data.size, root));
}

Status ShmTransport::do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                                  std::span<const int64_t> recv_counts) {
  return outcome("alltoallv", collectives_.alltoallv(bytes(in.data), send_counts, bytes(out.data),
                                                     recv_counts));
}

Status ShmTransport::do_reducescatter(ConstBuffer in, Buffer out,
                                      std::span<const int64_t> recv_counts, DataType type,
                                      ReduceOp op) {
  auto fn = reduce_function(kName, type, op);  // check_reduction found it
  return outcome("reducescatter",
                 collectives_.reducescatter(bytes(in.data), bytes(out.data), recv_counts,
                                            common::data_type_size(type), fn.value(),
                                            type == DataType::kBool));
}

Status ShmTransport::do_barrier() { return outcome("barrier", collectives_.barrier()); }

}  // namespace hvd::transports::shm
