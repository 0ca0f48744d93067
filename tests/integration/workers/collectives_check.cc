// Integration worker: checks every collective of libhvd.so (through its C
// ABI) for exact results at whatever world size it is started with, then
// shuts down, initializes again and checks once more.
//
//   hvdrun -np 4 build/bin/collectives_check
// Prints "collectives_check: rank R of N OK" and exits 0, or one line per
// mismatch ("collectives_check: rank R: allreduce int32 sum at index 3: got
// X expected Y") and exits 1. Arguments are a usage error (exit 2).
#include <hvd/c_api.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

class Checker {
 public:
  int rank = -1;
  int size = 0;
  int failures = 0;

  void mismatch(const std::string& what) {
    ++failures;
    std::printf("collectives_check: rank %d: %s\n", rank, what.c_str());
  }

  // True when `code` is HVD_OK; otherwise reports the call's error.
  bool ok(int code, const std::string& what) {
    if (code == HVD_OK) return true;
    mismatch(what + " failed (code " + std::to_string(code) + "): " + hvd_last_error());
    return false;
  }

  void expect_error(int code, int expected, const std::string& what, const std::string& fragment) {
    std::string message = hvd_last_error();
    if (code != expected || message.find(fragment) == std::string::npos) {
      mismatch(what + ": got code " + std::to_string(code) + " '" + message + "', expected code " +
               std::to_string(expected) + " mentioning '" + fragment + "'");
    }
  }
};

template <typename T>
std::string show(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::to_string(v);
  else return std::to_string(static_cast<int64_t>(v));
}

const char* op_name(int op) {
  switch (op) {
    case HVD_OP_SUM: return "sum";
    case HVD_OP_AVERAGE: return "average";
    case HVD_OP_MIN: return "min";
    case HVD_OP_MAX: return "max";
    case HVD_OP_PRODUCT: return "product";
  }
  return "?";
}

// Element i of rank r's input. Sums of any world up to 127 ranks fit int8;
// products stay within +-4.
int64_t input(int op, bool is_signed, int rank, int size, size_t i) {
  auto idx = static_cast<int64_t>(i);
  switch (op) {
    case HVD_OP_SUM:
    case HVD_OP_AVERAGE: return (rank + idx) % 3 - (is_signed ? 1 : 0);
    case HVD_OP_PRODUCT: {
      int64_t v = 1;
      if (rank == idx % size) v += 1;
      if (size > 1 && rank == (idx + 1) % size) v += 1;
      if (is_signed && idx % 2 == 0 && rank == (idx + 2) % size) v = -v;
      return v;
    }
    default: return (idx * 7 + rank * 3) % 11 - (is_signed ? 5 : 0);  // min, max
  }
}

template <typename T>
T expected_value(int op, int size, size_t i) {
  constexpr bool is_signed = std::is_signed_v<T>;
  if (op == HVD_OP_SUM || op == HVD_OP_AVERAGE) {
    int64_t sum = 0;
    for (int r = 0; r < size; ++r) sum += input(op, is_signed, r, size, i);
    if (op == HVD_OP_SUM) return static_cast<T>(sum);
    // The runtime sums in T, then divides by the size (integers truncate).
    return static_cast<T>(static_cast<T>(sum) / size);
  }
  T acc = static_cast<T>(input(op, is_signed, 0, size, i));
  for (int r = 1; r < size; ++r) {
    T v = static_cast<T>(input(op, is_signed, r, size, i));
    if (op == HVD_OP_MIN) acc = std::min(acc, v);
    else if (op == HVD_OP_MAX) acc = std::max(acc, v);
    else acc = static_cast<T>(acc * v);
  }
  return acc;
}

template <typename T>
void check_allreduce(Checker& c, int dtype, const char* type_name, int op, size_t n) {
  std::vector<T> data(n);
  for (size_t i = 0; i < n; ++i) {
    data[i] = static_cast<T>(input(op, std::is_signed_v<T>, c.rank, c.size, i));
  }
  std::string what = std::string("allreduce ") + type_name + " " + op_name(op);
  if (!c.ok(hvd_allreduce(data.data(), static_cast<int64_t>(n), dtype, op), what)) return;
  for (size_t i = 0; i < n; ++i) {
    T expected = expected_value<T>(op, c.size, i);
    if (data[i] != expected) {
      c.mismatch(what + " at index " + std::to_string(i) + ": got " + show(data[i]) +
                 " expected " + show(expected));
      return;
    }
  }
}

// float16 and bfloat16 travel as raw bits: 1.0 from every rank sums to the
// world size, max of rank + 1 is the world size. Bit patterns of a small
// positive integer n (exact below 2048 and 256): exponent e = floor(log2 n).
uint16_t float16_of(int n) {
  int e = 0;
  while ((n >> (e + 1)) != 0) ++e;
  return static_cast<uint16_t>(((e + 15) << 10) | ((n << (10 - e)) & 0x3ff));
}
uint16_t bfloat16_of(int n) {
  int e = 0;
  while ((n >> (e + 1)) != 0) ++e;
  return static_cast<uint16_t>(((e + 127) << 7) | ((n << (7 - e)) & 0x7f));
}

void check_16bit_allreduces(Checker& c) {
  struct Case {
    int dtype;
    const char* name;
    uint16_t (*of)(int);
  };
  for (Case k : {Case{HVD_FLOAT16, "float16", float16_of}, Case{HVD_BFLOAT16, "bfloat16", bfloat16_of}}) {
    for (int op : {HVD_OP_SUM, HVD_OP_MAX}) {
      std::vector<uint16_t> data(1000, k.of(op == HVD_OP_SUM ? 1 : c.rank + 1));
      std::string what = std::string("allreduce ") + k.name + " " + op_name(op);
      if (!c.ok(hvd_allreduce(data.data(), static_cast<int64_t>(data.size()), k.dtype, op), what)) continue;
      uint16_t expected = k.of(c.size);
      for (size_t i = 0; i < data.size(); ++i) {
        if (data[i] != expected) {
          c.mismatch(what + " at index " + std::to_string(i) + ": got bits " + std::to_string(data[i]) +
                     " expected " + std::to_string(expected));
          break;
        }
      }
    }
  }
}

void check_all_allreduces(Checker& c) {
  for (int op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
    check_allreduce<uint8_t>(c, HVD_UINT8, "uint8", op, 1000);
    check_allreduce<int8_t>(c, HVD_INT8, "int8", op, 1000);
    check_allreduce<int16_t>(c, HVD_INT16, "int16", op, 1000);
    check_allreduce<int32_t>(c, HVD_INT32, "int32", op, 1000);
    check_allreduce<int64_t>(c, HVD_INT64, "int64", op, 1000);
    check_allreduce<float>(c, HVD_FLOAT32, "float32", op, 1000);
    check_allreduce<double>(c, HVD_FLOAT64, "float64", op, 1000);
  }
  check_allreduce<float>(c, HVD_FLOAT32, "float32", HVD_OP_SUM, 1 << 20);  // many segments
  check_allreduce<int32_t>(c, HVD_INT32, "int32", HVD_OP_SUM, 1);
  check_16bit_allreduces(c);
}

void check_broadcasts(Checker& c) {
  for (int root = 0; root < c.size; ++root) {
    std::vector<int32_t> ints(1000, -1);
    std::vector<double> doubles(333, -1.0);
    if (c.rank == root) {
      for (size_t i = 0; i < ints.size(); ++i) ints[i] = root * 1000 + static_cast<int32_t>(i);
      for (size_t i = 0; i < doubles.size(); ++i) doubles[i] = root + i / 4.0;
    }
    std::string what = "broadcast from root " + std::to_string(root);
    if (c.ok(hvd_broadcast(ints.data(), 1000, HVD_INT32, root), what + " int32")) {
      for (size_t i = 0; i < ints.size(); ++i) {
        if (ints[i] != root * 1000 + static_cast<int32_t>(i)) {
          c.mismatch(what + " int32 at index " + std::to_string(i) + ": got " + show(ints[i]) +
                     " expected " + show(root * 1000 + static_cast<int32_t>(i)));
          break;
        }
      }
    }
    if (c.ok(hvd_broadcast(doubles.data(), 333, HVD_FLOAT64, root), what + " float64")) {
      for (size_t i = 0; i < doubles.size(); ++i) {
        if (doubles[i] != root + i / 4.0) {
          c.mismatch(what + " float64 at index " + std::to_string(i) + ": got " +
                     show(doubles[i]) + " expected " + show(root + i / 4.0));
          break;
        }
      }
    }
  }
}

void check_allgathers(Checker& c) {
  // Uneven: rank r contributes r + 1 elements r * 100 + k.
  std::vector<int64_t> counts(static_cast<size_t>(c.size));
  int64_t total = 0;
  for (int r = 0; r < c.size; ++r) total += counts[static_cast<size_t>(r)] = r + 1;
  std::vector<int64_t> mine(static_cast<size_t>(c.rank + 1));
  for (size_t k = 0; k < mine.size(); ++k) mine[k] = c.rank * 100 + static_cast<int64_t>(k);
  std::vector<int64_t> out(static_cast<size_t>(total), -1);
  if (c.ok(hvd_allgather(mine.data(), c.rank + 1, HVD_INT64, out.data(), counts.data()),
           "allgather uneven int64")) {
    size_t at = 0;
    for (int r = 0; r < c.size && at < out.size(); ++r) {
      for (int64_t k = 0; k <= r; ++k, ++at) {
        if (out[at] != r * 100 + k) {
          c.mismatch("allgather uneven int64 at index " + std::to_string(at) + ": got " +
                     show(out[at]) + " expected " + show(r * 100 + k));
          return;
        }
      }
    }
  }
  // Even, counts = NULL.
  std::vector<float> even{static_cast<float>(c.rank), c.rank + 0.5f};
  std::vector<float> all(static_cast<size_t>(2 * c.size), -1.0f);
  if (c.ok(hvd_allgather(even.data(), 2, HVD_FLOAT32, all.data(), nullptr), "allgather even float32")) {
    for (int r = 0; r < c.size; ++r) {
      if (all[static_cast<size_t>(2 * r)] != r || all[static_cast<size_t>(2 * r + 1)] != r + 0.5f) {
        c.mismatch("allgather even float32 at index " + std::to_string(2 * r) + ": got " +
                   show(all[static_cast<size_t>(2 * r)]) + " expected " + show(r));
        return;
      }
    }
  }
}

void check_argument_errors(Checker& c) {
  int32_t x = 1;
  c.expect_error(hvd_allreduce(&x, 1, 42, HVD_OP_SUM), HVD_ERR_INVALID_ARGUMENT,
                 "allreduce with dtype 42", "42");
  c.expect_error(hvd_allreduce(&x, 1, HVD_INT32, 17), HVD_ERR_INVALID_ARGUMENT,
                 "allreduce with op 17", "17");
  c.expect_error(hvd_allreduce(&x, -1, HVD_INT32, HVD_OP_SUM), HVD_ERR_INVALID_ARGUMENT,
                 "allreduce with count -1", "negative");
  c.expect_error(hvd_allreduce(nullptr, 4, HVD_INT32, HVD_OP_SUM), HVD_ERR_INVALID_ARGUMENT,
                 "allreduce of null", "null");
  c.expect_error(hvd_broadcast(&x, 1, HVD_INT32, c.size), HVD_ERR_INVALID_ARGUMENT,
                 "broadcast from root " + std::to_string(c.size), "root");
  c.expect_error(hvd_broadcast(&x, 1, HVD_INT32, -1), HVD_ERR_INVALID_ARGUMENT,
                 "broadcast from root -1", "root");
}

// Every rank+1 summed: the world works (again).
void check_world_sum(Checker& c, const char* when) {
  int64_t v = c.rank + 1;
  std::string what = std::string("allreduce int64 sum ") + when;
  if (!c.ok(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM), what)) return;
  int64_t expected = int64_t{c.size} * (c.size + 1) / 2;
  if (v != expected) c.mismatch(what + " at index 0: got " + show(v) + " expected " + show(expected));
}

void check_reinit(Checker& c) {
  if (!c.ok(hvd_shutdown(), "shutdown")) return;
  if (hvd_is_initialized() != 0 || hvd_rank() != -1) {
    c.mismatch("after shutdown: is_initialized " + std::to_string(hvd_is_initialized()) +
               ", rank " + std::to_string(hvd_rank()));
  }
  int32_t x = 1;
  c.expect_error(hvd_allreduce(&x, 1, HVD_INT32, HVD_OP_SUM), HVD_ERR_FAILED_PRECONDITION,
                 "allreduce after shutdown", "not initialized");
  if (!c.ok(hvd_init(), "init again")) return;
  if (hvd_rank() != c.rank || hvd_size() != c.size) {
    c.mismatch("after init again: rank " + std::to_string(hvd_rank()) + " of " +
               std::to_string(hvd_size()) + ", was " + std::to_string(c.rank) + " of " +
               std::to_string(c.size));
  }
  check_world_sum(c, "after init again");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc > 1) {
    std::fprintf(stderr, "collectives_check: unexpected argument '%s'\nusage: collectives_check\n", argv[1]);
    return 2;
  }
  Checker c;
  if (hvd_init() != HVD_OK) {
    std::printf("collectives_check: init failed: %s\n", hvd_last_error());
    return 1;
  }
  c.rank = hvd_rank();
  c.size = hvd_size();
  check_world_sum(c, "first");
  check_all_allreduces(c);
  check_broadcasts(c);
  check_allgathers(c);
  c.ok(hvd_barrier(), "barrier");
  check_argument_errors(c);
  c.ok(hvd_barrier(), "barrier after argument errors");
  check_reinit(c);
  c.ok(hvd_barrier(), "final barrier");
  c.ok(hvd_shutdown(), "final shutdown");
  if (c.failures > 0) {
    std::printf("collectives_check: rank %d of %d FAILED (%d problems)\n", c.rank, c.size, c.failures);
    return 1;
  }
  std::printf("collectives_check: rank %d of %d OK\n", c.rank, c.size);
  return 0;
}
