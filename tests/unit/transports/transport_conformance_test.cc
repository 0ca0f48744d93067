// One conformance suite for every CPU transport in the registry, at world
// sizes 1 to 4 (8 too on shm), ranks as threads over an in-process key-value store.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "rank_threads.h"
#include "transport_under_test.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {
namespace {

using common::StatusCode;
using testing::Problems;
using testing::RankOptions;
using testing::run_ranks;
using testing::require_no_problems;
using testing::transport_under_test;
using testing::world_sizes;

// Element i of rank r's input for `op`, small enough that reducing up to four
// ranks fits every type (int8 included) exactly.
int64_t input_value(ReduceOp op, bool is_signed, int rank, size_t i) {
  auto idx = static_cast<int64_t>(i);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return (rank + 1) * (idx % 5 + 1) - (is_signed ? 3 : 0);
    case ReduceOp::kProduct: return 1 + (rank + idx) % 2 - (is_signed && idx % 3 == 0 ? 2 : 0);
    case ReduceOp::kMin:
    case ReduceOp::kMax: return (idx * 7 + rank * 3) % 11 - (is_signed ? 5 : 0);
  }
  return 0;
}

template <typename T>
T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return static_cast<T>(a + b);
    case ReduceOp::kProduct: return static_cast<T>(a * b);
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
  }
  return a;
}

template <typename T>
void check_allreduce(Transport& t, DataType type, ReduceOp op, size_t n, Problems& problems) {
  constexpr bool is_signed = std::is_signed_v<T>;
  std::vector<T> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<T>(input_value(op, is_signed, t.rank(), i));
  std::string what = "allreduce " + std::string(common::data_type_name(type)) + " " +
                     std::string(common::reduce_op_name(op)) + " n=" + std::to_string(n);
  Status s = t.allreduce({data.data(), n * sizeof(T)}, type, op);
  if (!s.is_ok()) {
    problems.push_back(what + ": " + s.to_string());
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    T expected = static_cast<T>(input_value(op, is_signed, 0, i));
    for (int r = 1; r < t.size(); ++r) {
      expected = combine(op, expected, static_cast<T>(input_value(op, is_signed, r, i)));
    }
    if (data[i] != expected) {
      problems.push_back(what + " at index " + std::to_string(i) + ": got " +
                         std::to_string(data[i]) + " expected " + std::to_string(expected));
      return;
    }
  }
}

// float16 and bfloat16 travel as raw 16-bit patterns; the inputs are small
// integers, exact in both formats, so every reduction order gives the same result.
void check_16bit_allreduce(Transport& t, DataType type, ReduceOp op, size_t n, Problems& problems) {
  bool bf16 = type == DataType::kBFloat16;
  auto to_bits = [bf16](int64_t v) {
    auto f = static_cast<float>(v);
    return bf16 ? common::float_to_bfloat16(f) : common::float_to_half(f);
  };
  auto to_float = [bf16](uint16_t b) {
    return bf16 ? common::bfloat16_to_float(b) : common::half_to_float(b);
  };
  std::vector<uint16_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = to_bits(input_value(op, true, t.rank(), i));
  std::string what = "allreduce " + std::string(common::data_type_name(type)) + " " +
                     std::string(common::reduce_op_name(op)) + " n=" + std::to_string(n);
  Status s = t.allreduce({data.data(), n * sizeof(uint16_t)}, type, op);
  if (!s.is_ok()) {
    problems.push_back(what + ": " + s.to_string());
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    auto expected = static_cast<float>(input_value(op, true, 0, i));
    for (int r = 1; r < t.size(); ++r) {
      expected = combine(op, expected, static_cast<float>(input_value(op, true, r, i)));
    }
    if (to_float(data[i]) != expected) {
      problems.push_back(what + " at index " + std::to_string(i) + ": got " +
                         std::to_string(to_float(data[i])) + " expected " + std::to_string(expected));
      return;
    }
  }
}

void check_bool_allreduce(Transport& t, ReduceOp op, Problems& problems) {
  const size_t n = 64;
  auto value = [](int rank, size_t i) -> uint8_t {
    if (i % 4 == 0) return 1;                            // true everywhere
    if (i % 4 == 1) return 0;                            // false everywhere
    return (i + static_cast<size_t>(rank)) % 3 == 0 ? static_cast<uint8_t>(2 + rank) : 0;  // any non-zero is true
  };
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = value(t.rank(), i);
  bool is_and = op == ReduceOp::kMin || op == ReduceOp::kProduct;
  std::string what = "allreduce bool " + std::string(common::reduce_op_name(op));
  Status s = t.allreduce({data.data(), n}, DataType::kBool, op);
  if (!s.is_ok()) {
    problems.push_back(what + ": " + s.to_string());
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    bool expected = is_and;
    for (int r = 0; r < t.size(); ++r) {
      expected = is_and ? (expected && value(r, i) != 0) : (expected || value(r, i) != 0);
    }
    if (data[i] != (expected ? 1 : 0)) {
      problems.push_back(what + " at index " + std::to_string(i) + ": got " +
                         std::to_string(data[i]) + " expected " + std::to_string(expected));
      return;
    }
  }
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

void check_every_numeric_type(Transport& t, ReduceOp op, size_t n, Problems& problems) {
  check_allreduce<uint8_t>(t, DataType::kUInt8, op, n, problems);
  check_allreduce<int8_t>(t, DataType::kInt8, op, n, problems);
  check_allreduce<int16_t>(t, DataType::kInt16, op, n, problems);
  check_allreduce<int32_t>(t, DataType::kInt32, op, n, problems);
  check_allreduce<int64_t>(t, DataType::kInt64, op, n, problems);
  check_allreduce<float>(t, DataType::kFloat32, op, n, problems);
  check_allreduce<double>(t, DataType::kFloat64, op, n, problems);
}

}  // namespace

TEST_CASE("allreduce: every type and op", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int, std::unique_ptr<Transport>& t, Problems& p) {
    for (ReduceOp op : kOps) {
      check_every_numeric_type(*t, op, 1000, p);
      check_bool_allreduce(*t, op, p);
    }
    check_allreduce<int32_t>(*t, DataType::kInt32, ReduceOp::kSum, 1, p);
    check_allreduce<float>(*t, DataType::kFloat32, ReduceOp::kSum, 0, p);
    // Several of gloo's 1 MiB segments per rank.
    check_allreduce<float>(*t, DataType::kFloat32, ReduceOp::kSum, 700000, p);
  }));
}

TEST_CASE("allreduce: float16 and bfloat16, every op", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int, std::unique_ptr<Transport>& t, Problems& p) {
    for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
      for (ReduceOp op : kOps) check_16bit_allreduce(*t, type, op, 1000, p);
    }
    // Several of gloo's 1 MiB segments per rank.
    check_16bit_allreduce(*t, DataType::kFloat16, ReduceOp::kSum, 1500000, p);
  }));
}

TEST_CASE("allreduce: average is refused without failing the transport", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int, std::unique_ptr<Transport>& t, Problems& p) {
    std::vector<uint16_t> halves(8, 0x3c00);
    for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
      Status s = t->allreduce({halves.data(), halves.size() * 2}, type, ReduceOp::kAverage);
      // (t->name(): "auto" is the transport it picked.)
      std::string expected = "the " + std::string(t->name()) + " transport has no average reduction for " +
                             std::string(common::data_type_name(type));
      if (s.code() != StatusCode::kInvalidArgument || s.message() != expected) {
        p.push_back("average allreduce gave '" + s.to_string() + "'");
      }
    }
    check_allreduce<int32_t>(*t, DataType::kInt32, ReduceOp::kSum, 16, p);
  }));
}

TEST_CASE("allgatherv: uneven counts, one of them zero", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    auto byte = [](int r, size_t i) { return static_cast<uint8_t>(r * 31 + static_cast<int>(i)); };
    std::vector<int64_t> counts(static_cast<size_t>(t->size()));
    for (int r = 0; r < t->size(); ++r) counts[static_cast<size_t>(r)] = int64_t{r} * 1001;
    std::vector<uint8_t> in(static_cast<size_t>(counts[static_cast<size_t>(rank)]));
    for (size_t i = 0; i < in.size(); ++i) in[i] = byte(rank, i);
    std::vector<uint8_t> out(static_cast<size_t>(std::accumulate(counts.begin(), counts.end(), int64_t{0})), 0xEE);
    Status s = t->allgatherv({in.data(), in.size()}, {out.data(), out.size()}, counts);
    if (!s.is_ok()) {
      p.push_back("allgatherv: " + s.to_string());
      return;
    }
    size_t offset = 0;
    for (int r = 0; r < t->size(); ++r) {
      for (size_t i = 0; i < static_cast<size_t>(counts[static_cast<size_t>(r)]); ++i) {
        if (out[offset + i] != byte(r, i)) {
          p.push_back("allgatherv: byte " + std::to_string(i) + " from rank " + std::to_string(r) +
                      " is " + std::to_string(out[offset + i]));
          return;
        }
      }
      offset += static_cast<size_t>(counts[static_cast<size_t>(r)]);
    }
  }));
}

TEST_CASE("broadcast: from every root", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    for (int root = 0; root < t->size(); ++root) {
      std::vector<int32_t> data(2500, -1);
      if (rank == root) std::iota(data.begin(), data.end(), root * 10000);
      Status s = t->broadcast({data.data(), data.size() * 4}, root);
      if (!s.is_ok()) {
        p.push_back("broadcast from " + std::to_string(root) + ": " + s.to_string());
        return;
      }
      for (size_t i = 0; i < data.size(); ++i) {
        if (data[i] != root * 10000 + static_cast<int32_t>(i)) {
          p.push_back("broadcast from " + std::to_string(root) + ": element " + std::to_string(i) +
                      " is " + std::to_string(data[i]));
          return;
        }
      }
    }
  }));
}

TEST_CASE("reducescatter: uneven counts, one of them zero", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    int size = t->size();
    // Rank r keeps (r + 1) * 100 elements, except the last rank keeps none.
    std::vector<int64_t> elements(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) elements[static_cast<size_t>(r)] = (size > 1 && r == size - 1) ? 0 : (r + 1) * 100;
    int64_t total = std::accumulate(elements.begin(), elements.end(), int64_t{0});
    int64_t offset = std::accumulate(elements.begin(), elements.begin() + rank, int64_t{0});
    size_t mine = static_cast<size_t>(elements[static_cast<size_t>(rank)]);

    std::vector<int64_t> counts32;
    std::vector<int64_t> counts64;
    for (int64_t e : elements) {
      counts32.push_back(e * 4);
      counts64.push_back(e * 8);
    }
    std::vector<int32_t> in(static_cast<size_t>(total));
    for (size_t i = 0; i < in.size(); ++i) in[i] = rank * 1000 + static_cast<int32_t>(i);
    std::vector<int32_t> out(mine, -1);
    Status s = t->reducescatter({in.data(), in.size() * 4}, {out.data(), out.size() * 4}, counts32,
                                DataType::kInt32, ReduceOp::kSum);
    if (!s.is_ok()) {
      p.push_back("reducescatter int32 sum: " + s.to_string());
      return;
    }
    for (size_t k = 0; k < mine; ++k) {
      int32_t expected = 0;
      for (int r = 0; r < size; ++r) expected += r * 1000 + static_cast<int32_t>(offset) + static_cast<int32_t>(k);
      if (out[k] != expected) {
        p.push_back("reducescatter int32 sum: element " + std::to_string(k) + " is " +
                    std::to_string(out[k]) + " expected " + std::to_string(expected));
        return;
      }
    }

    std::vector<double> din(static_cast<size_t>(total));
    for (size_t i = 0; i < din.size(); ++i) din[i] = static_cast<double>((static_cast<int>(i) * 7 + rank * 3) % 11) - 5.5;
    std::vector<double> dout(mine, 99.0);
    s = t->reducescatter({din.data(), din.size() * 8}, {dout.data(), dout.size() * 8}, counts64,
                         DataType::kFloat64, ReduceOp::kMin);
    if (!s.is_ok()) {
      p.push_back("reducescatter float64 min: " + s.to_string());
      return;
    }
    for (size_t k = 0; k < mine; ++k) {
      double expected = 1e9;
      int i = static_cast<int>(offset) + static_cast<int>(k);
      for (int r = 0; r < size; ++r) expected = std::min(expected, static_cast<double>((i * 7 + r * 3) % 11) - 5.5);
      if (dout[k] != expected) {
        p.push_back("reducescatter float64 min: element " + std::to_string(k) + " is " +
                    std::to_string(dout[k]) + " expected " + std::to_string(expected));
        return;
      }
    }
  }));
}

TEST_CASE("barrier: nobody leaves before everybody arrived", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  CAPTURE(options.transport, options.size);
  std::atomic<int> arrived{0};
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    for (int round = 1; round <= 3; ++round) {
      if (rank == t->size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      arrived.fetch_add(1);
      Status s = t->barrier();
      if (!s.is_ok()) {
        p.push_back("barrier: " + s.to_string());
        return;
      }
      if (arrived.load() < round * t->size()) {
        p.push_back("barrier round " + std::to_string(round) + " returned after only " +
                    std::to_string(arrived.load()) + " arrivals");
      }
      Status again = t->barrier();  // nobody starts the next round early
      if (!again.is_ok()) p.push_back("barrier: " + again.to_string());
    }
  }));
}

TEST_CASE("invalid arguments are refused without failing the transport", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE(1, 3);
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    std::vector<int32_t> data(4, 1);
    auto expect_invalid = [&](const Status& s, const std::string& what, const std::string& fragment) {
      if (s.code() != StatusCode::kInvalidArgument || s.message().find(fragment) == std::string::npos) {
        p.push_back(what + " gave '" + s.to_string() + "', expected InvalidArgument with '" + fragment + "'");
      }
    };
    expect_invalid(t->broadcast({data.data(), 16}, t->size()), "broadcast root out of range",
                   "broadcast root " + std::to_string(t->size()) + " is not a rank");
    expect_invalid(t->broadcast({data.data(), 16}, -1), "broadcast root -1", "broadcast root -1");
    expect_invalid(t->allreduce({data.data(), 6}, DataType::kInt32, ReduceOp::kSum),
                   "allreduce of 6 bytes of int32", "not a whole number of int32");
    expect_invalid(t->allreduce({nullptr, 8}, DataType::kInt32, ReduceOp::kSum), "null allreduce",
                   "is null");
    std::vector<int64_t> wrong(static_cast<size_t>(t->size()) + 1, 0);
    expect_invalid(t->allgatherv({data.data(), 0}, {data.data(), 0}, wrong), "allgatherv counts",
                   "entries for a world of size");
    expect_invalid(t->allreduce({data.data(), 16}, DataType::kBool, ReduceOp::kAverage),
                   "bool average", "no average reduction for bool");
    check_allreduce<int32_t>(*t, DataType::kInt32, ReduceOp::kMax, 8, p);
    (void)rank;
  }));
}

TEST_CASE("a rank that goes away fails its peers' collectives, which stay failed", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE(2, 3, 4);
  options.timeout = std::chrono::milliseconds(2000);
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    int size = t->size();
    for (int i = 0; i < 3; ++i) check_allreduce<float>(*t, DataType::kFloat32, ReduceOp::kSum, 1000, p);
    if (rank == size - 1) {
      // The victim leaves mid-stream: its peers are already in the next allreduce.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      t.reset();
      return;
    }
    std::vector<float> data(100000, 1.0f);
    auto start = std::chrono::steady_clock::now();
    Status first = t->allreduce({data.data(), data.size() * 4}, DataType::kFloat32, ReduceOp::kSum);
    auto waited = std::chrono::steady_clock::now() - start;
    if (first.is_ok()) {
      p.push_back("allreduce with a departed rank succeeded");
      return;
    }
    if (waited > std::chrono::seconds(6)) {
      p.push_back("the failure took " +
                  std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
                  " ms with a 2000 ms timeout");
    }
    std::string who = "on rank " + std::to_string(rank) + " of " + std::to_string(size);
    if (first.message().find("allreduce") == std::string::npos ||
        first.message().find(who) == std::string::npos) {
      p.push_back("the error does not name the op and '" + who + "': " + first.to_string());
    }
    start = std::chrono::steady_clock::now();
    Status again = t->barrier();
    if (again.code() != first.code() || again.message() != first.message()) {
      p.push_back("the next call gave '" + again.to_string() + "' instead of the first error");
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100)) {
      p.push_back("the next call did not fail at once");
    }
  }));
}

TEST_CASE("a rank that stays silent makes its peers time out", "[transport]") {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE(2, 3);
  options.timeout = std::chrono::milliseconds(1000);
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // never calls
      return;
    }
    std::vector<int64_t> data(64, rank);
    auto start = std::chrono::steady_clock::now();
    Status s = t->allreduce({data.data(), data.size() * 8}, DataType::kInt64, ReduceOp::kMax);
    auto waited = std::chrono::steady_clock::now() - start;
    // A timeout; or, where a peer that timed out first tells the others
    // (shm), a failure naming the silent rank.
    const bool told = s.code() == StatusCode::kUnavailable &&
                      s.message().find("lost rank 0") != std::string::npos;
    if (s.code() != StatusCode::kTimeout && !told) {
      p.push_back("expected a timeout, got '" + s.to_string() + "'");
    }
    if (waited < std::chrono::milliseconds(900) || waited > std::chrono::milliseconds(2400)) {
      p.push_back("timed out after " +
                  std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
                  " ms with a 1000 ms timeout");
    }
  }));
}

TEST_CASE("a world of size 1 needs no store", "[transport]") {
  TransportContext context;
  auto transport = builtin_registry().create(transport_under_test(), context);
  REQUIRE(transport.is_ok());
  std::vector<double> data{1.5, -2.0};
  REQUIRE(transport.value()->allreduce({data.data(), 16}, DataType::kFloat64, ReduceOp::kSum).is_ok());
  CHECK(data == std::vector<double>{1.5, -2.0});
  CHECK(transport.value()->barrier().is_ok());
}

}  // namespace hvd::transports
