// Shared by the ops_check worker's files: the problem counter, op
// construction, element types and output readers.
#pragma once

#include <hvd/c_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/half.h"

namespace ops_check {

// Every wait has a deadline: a hang becomes a failure.
inline constexpr double kWaitSeconds = 60;

class Checker {
 public:
  int rank = -1;
  int size = 0;
  int failures = 0;

  void problem(const std::string& what) {
    ++failures;
    std::printf("ops_check: rank %d: %s\n", rank, what.c_str());
  }
  bool ok(int code, const std::string& what) {
    if (code == HVD_OK) return true;
    problem(what + " failed (code " + std::to_string(code) + "): " + hvd_last_error());
    return false;
  }
  // The call failed with `code` and a message containing every fragment.
  void expect_error(int got, int code, const std::string& what,
                    const std::vector<std::string>& fragments) {
    std::string message = hvd_last_error();
    bool matches = got == code;
    for (const auto& f : fragments) matches = matches && message.find(f) != std::string::npos;
    if (!matches) {
      std::string want;
      for (const auto& f : fragments) want += " '" + f + "'";
      problem(what + ": got code " + std::to_string(got) + " '" + message + "', expected code " +
              std::to_string(code) + " mentioning" + want);
    }
  }
  // Waits (with a deadline) and returns the op's code.
  int wait(int64_t handle) { return hvd_wait(handle, kWaitSeconds); }
};

// `name` must outlive the enqueue (hvd_enqueue copies it).
inline hvd_op make_op(int type, const char* name, int dtype, const int64_t* shape, int ndim) {
  hvd_op op = hvd_op_defaults(type);
  op.name = name;
  op.dtype = dtype;
  op.shape = shape;
  op.ndim = ndim;
  return op;
}

// ---- Element types -------------------------------------------------------------

// How one dtype stores and reads values (double as the common currency).
template <typename S>
struct Plain {
  using Storage = S;
  static Storage from(double v) { return static_cast<S>(v); }
  static double to(Storage s) { return static_cast<double>(s); }
};
struct Half {
  using Storage = uint16_t;
  static Storage from(double v) { return hvd::common::float_to_half(static_cast<float>(v)); }
  static double to(Storage s) { return hvd::common::half_to_float(s); }
};
struct BFloat {
  using Storage = uint16_t;
  static Storage from(double v) { return hvd::common::float_to_bfloat16(static_cast<float>(v)); }
  static double to(Storage s) { return hvd::common::bfloat16_to_float(s); }
};

struct DtypeInfo {
  int code;
  const char* name;
  bool is_signed;
  bool is_float;
};

inline const char* op_name(int op) {
  switch (op) {
    case HVD_OP_SUM: return "sum";
    case HVD_OP_AVERAGE: return "average";
    case HVD_OP_MIN: return "min";
    case HVD_OP_MAX: return "max";
    case HVD_OP_PRODUCT: return "product";
  }
  return "?";
}

// Reads a finished op's engine-allocated output.
template <typename T>
bool read_output(Checker& c, int64_t h, const std::string& what, std::vector<int64_t>& shape,
                 std::vector<T>& out) {
  int64_t dims[8];
  int32_t ndim = 0;
  if (!c.ok(hvd_handle_output_shape(h, dims, 8, &ndim), what + " output shape")) return false;
  shape.assign(dims, dims + ndim);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  out.assign(static_cast<size_t>(n), T{});
  return c.ok(hvd_handle_copy_output(h, out.data(), n * static_cast<int64_t>(sizeof(T))),
              what + " copy output");
}

// A finished op's output as raw bytes (elements of `width` bytes).
inline bool read_bytes(Checker& c, int64_t h, const std::string& what, size_t width,
                std::vector<uint8_t>& out) {
  int64_t dims[8];
  int32_t ndim = 0;
  if (!c.ok(hvd_handle_output_shape(h, dims, 8, &ndim), what + " output shape")) return false;
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; ++i) n *= dims[i];
  out.assign(static_cast<size_t>(n) * width, 0);
  return c.ok(hvd_handle_copy_output(h, out.data(), static_cast<int64_t>(out.size())),
              what + " copy output");
}

// The checks, by file: ops_check_reductions.cc, ops_check_movement.cc.
void check_allreduces(Checker& c);
void check_scaling(Checker& c);
void check_reducescatters(Checker& c);
void check_grouped_allreduces(Checker& c);
void check_every_dtype(Checker& c);
void check_broadcasts(Checker& c);
void check_allgathers(Checker& c);
void check_alltoalls(Checker& c);

}  // namespace ops_check
