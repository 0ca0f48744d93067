#include "transports/argument_checks.h"

#include <numeric>
#include <string>

namespace hvd::transports {

namespace {

using common::invalid_argument;

Status check_pointer(const void* data, size_t bytes, const char* what) {
  if (data == nullptr && bytes > 0) {
    return invalid_argument(std::string(what) + " is null but holds " + std::to_string(bytes) +
                            " bytes");
  }
  return Status::ok();
}

Status check_element_multiple(size_t bytes, DataType type, const char* what) {
  size_t element = common::data_type_size(type);
  if (element == 0 || bytes % element != 0) {
    return invalid_argument(std::string(what) + " holds " + std::to_string(bytes) +
                            " bytes, not a whole number of " +
                            std::string(common::data_type_name(type)) + " elements");
  }
  return Status::ok();
}

// One count per rank, none negative, summing to `bytes`.
Status check_counts(std::span<const int64_t> counts, int size, size_t bytes, const char* what,
                    const char* buffer) {
  if (counts.size() != static_cast<size_t>(size)) {
    return invalid_argument(std::string(what) + " has " + std::to_string(counts.size()) +
                            " entries for a world of size " + std::to_string(size));
  }
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0) {
      return invalid_argument(std::string(what) + "[" + std::to_string(r) + "] is negative (" +
                              std::to_string(counts[r]) + ")");
    }
  }
  if (static_cast<size_t>(total(counts)) != bytes) {
    return invalid_argument(std::string(what) + " add up to " + std::to_string(total(counts)) +
                            " bytes but " + buffer + " holds " + std::to_string(bytes));
  }
  return Status::ok();
}

}  // namespace

Status check_context(std::string_view transport, const TransportContext& ctx) {
  const std::string who(transport);
  if (ctx.size < 1 || ctx.rank < 0 || ctx.rank >= ctx.size) {
    return invalid_argument(who + " transport: rank " + std::to_string(ctx.rank) +
                            " is not a rank of a world of size " + std::to_string(ctx.size));
  }
  if (ctx.size > 1 && ctx.store == nullptr) {
    return invalid_argument(who + " transport: a world of size " + std::to_string(ctx.size) +
                            " needs a rendezvous store");
  }
  if (ctx.timeout.count() <= 0) {
    return invalid_argument(who + " transport: the timeout must be positive");
  }
  return Status::ok();
}

int64_t total(std::span<const int64_t> counts) {
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

Status check_allreduce(Buffer data, DataType type) {
  HVD_RETURN_IF_ERROR(check_pointer(data.data, data.size, "allreduce buffer"));
  return check_element_multiple(data.size, type, "allreduce buffer");
}

Status check_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts, int rank,
                        int size) {
  HVD_RETURN_IF_ERROR(check_pointer(in.data, in.size, "allgatherv input"));
  HVD_RETURN_IF_ERROR(check_pointer(out.data, out.size, "allgatherv output"));
  HVD_RETURN_IF_ERROR(check_counts(counts, size, out.size, "allgatherv counts", "the output"));
  if (static_cast<size_t>(counts[rank]) != in.size) {
    return invalid_argument("allgatherv counts[" + std::to_string(rank) + "] is " +
                            std::to_string(counts[rank]) + " bytes but this rank's input holds " +
                            std::to_string(in.size));
  }
  return Status::ok();
}

Status check_broadcast(Buffer data, int root, int size) {
  if (root < 0 || root >= size) {
    return invalid_argument("broadcast root " + std::to_string(root) +
                            " is not a rank of a world of size " + std::to_string(size));
  }
  return check_pointer(data.data, data.size, "broadcast buffer");
}

Status check_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                       std::span<const int64_t> recv_counts, int rank, int size) {
  HVD_RETURN_IF_ERROR(check_pointer(in.data, in.size, "alltoallv input"));
  HVD_RETURN_IF_ERROR(check_pointer(out.data, out.size, "alltoallv output"));
  HVD_RETURN_IF_ERROR(check_counts(send_counts, size, in.size, "alltoallv send counts", "the input"));
  HVD_RETURN_IF_ERROR(check_counts(recv_counts, size, out.size, "alltoallv recv counts", "the output"));
  if (send_counts[rank] != recv_counts[rank]) {
    return invalid_argument("alltoallv sends " + std::to_string(send_counts[rank]) +
                            " bytes to this rank (" + std::to_string(rank) + ") but receives " +
                            std::to_string(recv_counts[rank]));
  }
  return Status::ok();
}

Status check_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                           DataType type, int rank, int size) {
  HVD_RETURN_IF_ERROR(check_pointer(in.data, in.size, "reducescatter input"));
  HVD_RETURN_IF_ERROR(check_pointer(out.data, out.size, "reducescatter output"));
  HVD_RETURN_IF_ERROR(check_counts(recv_counts, size, in.size, "reducescatter recv counts", "the input"));
  for (int64_t count : recv_counts) {
    HVD_RETURN_IF_ERROR(check_element_multiple(static_cast<size_t>(count), type, "a reducescatter chunk"));
  }
  if (static_cast<size_t>(recv_counts[rank]) != out.size) {
    return invalid_argument("reducescatter recv counts[" + std::to_string(rank) + "] is " +
                            std::to_string(recv_counts[rank]) + " bytes but the output holds " +
                            std::to_string(out.size));
  }
  return Status::ok();
}

}  // namespace hvd::transports
