// The C++ API of hvd: a header-only layer over the C ABI (c_api.h), so that
// C++ and Python programs drive the same runtime through the same calls.
// Failures throw hvd::Error carrying the code and the runtime's message.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "hvd/c_api.h"

namespace hvd {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

enum class ReduceOp : int {
  kSum = HVD_OP_SUM,
  kAverage = HVD_OP_AVERAGE,
  kMin = HVD_OP_MIN,
  kMax = HVD_OP_MAX,
  kProduct = HVD_OP_PRODUCT,
};

namespace detail {
inline void check(int code) {
  if (code != HVD_OK) throw Error(code, hvd_last_error());
}
}  // namespace detail

// The HVD_* element type of T.
template <typename T>
constexpr int data_type_of() {
  if constexpr (std::is_same_v<T, bool>) return HVD_BOOL;
  else if constexpr (std::is_same_v<T, uint8_t>) return HVD_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>) return HVD_INT8;
  else if constexpr (std::is_same_v<T, int16_t>) return HVD_INT16;
  else if constexpr (std::is_same_v<T, int32_t>) return HVD_INT32;
  else if constexpr (std::is_same_v<T, int64_t>) return HVD_INT64;
  else if constexpr (std::is_same_v<T, float>) return HVD_FLOAT32;
  else if constexpr (std::is_same_v<T, double>) return HVD_FLOAT64;
  else static_assert(sizeof(T) == 0, "hvd: unsupported element type");
}

inline void init() { detail::check(hvd_init()); }
inline void shutdown() { detail::check(hvd_shutdown()); }
inline bool is_initialized() { return hvd_is_initialized() != 0; }
inline int rank() { return hvd_rank(); }
inline int size() { return hvd_size(); }
inline int local_rank() { return hvd_local_rank(); }
inline int local_size() { return hvd_local_size(); }
inline int cross_rank() { return hvd_cross_rank(); }
inline int cross_size() { return hvd_cross_size(); }

template <typename T>
void allreduce(std::span<T> data, ReduceOp op = ReduceOp::kSum) {
  detail::check(hvd_allreduce(data.data(), static_cast<int64_t>(data.size()), data_type_of<T>(),
                              static_cast<int>(op)));
}

template <typename T>
void broadcast(std::span<T> data, int root) {
  detail::check(
      hvd_broadcast(data.data(), static_cast<int64_t>(data.size()), data_type_of<T>(), root));
}

// Every rank's elements in rank order; ranks may contribute different counts.
template <typename T>
std::vector<T> allgather(std::span<const T> in) {
  std::vector<int64_t> counts(static_cast<size_t>(size()));
  int64_t mine = static_cast<int64_t>(in.size());
  detail::check(hvd_allgather(&mine, 1, HVD_INT64, counts.data(), nullptr));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<T> out(static_cast<size_t>(total));
  detail::check(hvd_allgather(in.data(), mine, data_type_of<T>(), out.data(), counts.data()));
  return out;
}

inline void barrier() { detail::check(hvd_barrier()); }

// The library's version, e.g. "0.1.0".
inline std::string version() { return hvd_version(); }

}  // namespace hvd
