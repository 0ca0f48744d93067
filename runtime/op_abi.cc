#include "runtime/op_abi.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace hvd::runtime {

namespace {

using common::invalid_argument;

constexpr size_t kOwnSize = sizeof(hvd_op);
constexpr size_t kMinSize = HVD_OP_MIN_SIZE;
static_assert(kMinSize <= kOwnSize);

uint32_t size_of(const void* op) {
  uint32_t size = 0;
  std::memcpy(&size, op, sizeof(size));  // struct_size is first in every layout
  return size;
}

// Checks a struct_size against the layouts this libhvd knows; `what` names
// the struct in errors ("hvd_op", "hvd_enqueue_group: op 3").
common::Status check_size(const void* op, uint32_t size, const std::string& what) {
  if (size < kMinSize) {
    return invalid_argument(
        what + ": struct_size is " + std::to_string(size) + ", below the oldest hvd_op layout (" +
        std::to_string(kMinSize) + " bytes)" +
        (size == 0 ? ": set it to sizeof(hvd_op) (hvd_op_defaults() does)" : ""));
  }
  if (size > kOwnSize) {
    const auto* bytes = static_cast<const unsigned char*>(op);
    for (size_t i = kOwnSize; i < size; ++i) {
      if (bytes[i] != 0) {
        return invalid_argument(
            what + " is " + std::to_string(size) + " bytes, newer than this libhvd (" +
            std::to_string(kOwnSize) + " bytes): byte " + std::to_string(i) +
            " sets a field this libhvd does not know; use a newer libhvd or leave that field "
            "at its default");
      }
    }
  }
  return common::Status::ok();
}

hvd_op copy_known(const void* op, uint32_t size) {
  hvd_op out{};  // the defaults of fields a shorter struct lacks: zero (stream NULL)
  std::memcpy(&out, op, std::min<size_t>(size, kOwnSize));
  out.struct_size = static_cast<uint32_t>(kOwnSize);
  return out;
}

}  // namespace

common::Result<hvd_op> read_op(const hvd_op* op, const char* call) {
  if (op == nullptr) return invalid_argument(std::string(call) + ": op is null");
  const uint32_t size = size_of(op);
  HVD_RETURN_IF_ERROR(check_size(op, size, std::string(call) + ": hvd_op"));
  return copy_known(op, size);
}

common::Result<std::vector<hvd_op>> read_ops(const hvd_op* ops, int32_t n, const char* call) {
  if (ops == nullptr || n < 1) {
    return invalid_argument(std::string(call) + ": needs n >= 1 ops (n is " + std::to_string(n) +
                            ")");
  }
  const auto* base = reinterpret_cast<const unsigned char*>(ops);
  const uint32_t stride = size_of(base);
  std::vector<hvd_op> out;
  out.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const unsigned char* op = base + static_cast<size_t>(i) * stride;
    const std::string what = std::string(call) + ": op " + std::to_string(i) + " (hvd_op)";
    HVD_RETURN_IF_ERROR(check_size(op, size_of(op), what));
    if (size_of(op) != stride) {
      return invalid_argument(what + " has struct_size " + std::to_string(size_of(op)) +
                              " but op 0 has " + std::to_string(stride) +
                              ": every op of the array must have the same size");
    }
    out.push_back(copy_known(op, stride));
  }
  return out;
}

}  // namespace hvd::runtime
