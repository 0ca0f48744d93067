// The header-only C++ API (hvd/hvd.h) in a world of one: every function is
// instantiated and run once, so that the templates compile and do what the
// C ABI underneath does.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "hvd/hvd.h"

namespace {

struct Session {
  Session() {
    for (const char* name : {"HVD_RANK", "HVD_SIZE", "HVD_RENDEZVOUS_ADDR", "HVD_JOB_TOKEN",
                             "HVD_CPU_TRANSPORT", "HVD_LOG_LEVEL", "HVD_TIMELINE"}) {
      unsetenv(name);
    }
    hvd::init();
  }
  ~Session() { hvd_shutdown(); }
};

}  // namespace

TEST_CASE("c++ api: async handles", "[cpp_api]") {
  Session session;
  std::vector<float> data{1.0f, 2.0f};
  hvd::OpOptions o;
  o.name = "scaled";
  o.prescale_factor = 3.0;
  o.postscale_factor = 0.5;
  hvd::Handle h = hvd::allreduce_async<float>(data, hvd::ReduceOp::kSum, o);
  CHECK(h.valid());
  h.wait(10);
  CHECK(h.poll());
  CHECK(data == std::vector<float>{1.5f, 3.0f});

  // Move-only; moving leaves the source empty.
  hvd::Handle moved = std::move(h);
  CHECK(moved.valid());
  CHECK_FALSE(h.valid());  // NOLINT(bugprone-use-after-move)
  moved = hvd::Handle();

  std::vector<int32_t> rows{1, 2, 3, 4, 5, 6};
  hvd::Handle g = hvd::allgather_async<int32_t>(std::span<const int32_t>(rows), {3, 2});
  CHECK(g.output_shape() == std::vector<int64_t>{3, 2});
  CHECK(g.output<int32_t>() == rows);
  CHECK_THROWS_AS(hvd::allgather_async<int32_t>(std::span<const int32_t>(rows), {4, 2}), hvd::Error);

  std::vector<double> b{4.0, 5.0};
  hvd::broadcast_async<double>(b, 0).wait();
  hvd::broadcast<double>(b, 0, hvd::OpOptions{});
  CHECK(b == std::vector<double>{4.0, 5.0});
}

TEST_CASE("c++ api: every collective", "[cpp_api]") {
  Session session;
  std::vector<int64_t> v{3, 4};
  hvd::allreduce<int64_t>(v, hvd::ReduceOp::kMax);
  hvd::allreduce<int64_t>(v, hvd::ReduceOp::kSum, hvd::OpOptions{});
  CHECK(v == std::vector<int64_t>{3, 4});

  std::vector<float> x{1.0f}, y{2.0f, 3.0f};
  hvd::grouped_allreduce<float>({std::span<float>(x), std::span<float>(y)}, hvd::ReduceOp::kAverage);
  CHECK(y == std::vector<float>{2.0f, 3.0f});

  std::vector<uint8_t> bytes{1, 2, 3};
  CHECK(hvd::allgather<uint8_t>(std::span<const uint8_t>(bytes)) == bytes);
  auto gathered = hvd::grouped_allgather_async<uint8_t>(
      {std::span<const uint8_t>(bytes), std::span<const uint8_t>(bytes)});
  REQUIRE(gathered.size() == 2);
  CHECK(gathered[1].output<uint8_t>() == bytes);

  std::vector<int16_t> a2a{7, 8, 9};
  std::vector<int64_t> received;
  CHECK(hvd::alltoall<int16_t>(std::span<const int16_t>(a2a), {}, &received) == a2a);
  CHECK(received == std::vector<int64_t>{3});

  std::vector<double> rs{1.0, 2.0};
  CHECK(hvd::reducescatter<double>(std::span<const double>(rs)) == rs);
  auto scattered = hvd::grouped_reducescatter_async<double>({std::span<const double>(rs)});
  CHECK(scattered[0].output<double>() == rs);

  std::vector<hvd::float16> halves(2, hvd::float16{0x3c00});
  hvd::allreduce<hvd::float16>(halves);
  CHECK(halves[1].bits == 0x3c00);
  std::vector<hvd::bfloat16> bf(1, hvd::bfloat16{0x3f80});
  hvd::allreduce_async<hvd::bfloat16>(bf, hvd::ReduceOp::kAverage).wait();
  CHECK(bf[0].bits == 0x3f80);

  hvd::barrier();
  CHECK(hvd::join() == 0);
}

TEST_CASE("c++ api: process sets and errors", "[cpp_api]") {
  Session session;
  CHECK(hvd::global_process_set.size() == 1);
  CHECK(hvd::global_process_set.rank() == 0);
  hvd::ProcessSet set = hvd::add_process_set(std::vector<int32_t>{0});
  CHECK(set.id() == 1);
  CHECK(set.included());
  CHECK(set.ranks() == std::vector<int32_t>{0});
  hvd::barrier(set);
  CHECK(hvd::join(set) == 0);
  std::vector<int32_t> v{5};
  hvd::OpOptions o;
  o.process_set = set;
  hvd::allreduce<int32_t>(v, hvd::ReduceOp::kSum, o);
  hvd::remove_process_set(set);
  CHECK_THROWS_AS(set.size(), hvd::Error);
  try {
    hvd::allreduce<int32_t>(v, hvd::ReduceOp::kSum, o);
    FAIL("an op on a removed set was accepted");
  } catch (const hvd::Error& e) {
    CHECK(e.code() == HVD_ERR_NOT_FOUND);
  }
  o = hvd::OpOptions{};
  o.prescale_factor = 2.5;
  hvd::allreduce<int32_t>(v, hvd::ReduceOp::kSum, o);  // integers scale as Horovod's: 12.5 -> 12
  CHECK(v == std::vector<int32_t>{12});
  bool flags[1] = {true};
  CHECK_THROWS_AS(hvd::allreduce_async<bool>(std::span<bool>(flags), hvd::ReduceOp::kSum, o),
                  hvd::Error);
  hvd::start_timeline("/tmp/hvd_cpp_api_timeline.json");
  hvd::stop_timeline();
  std::remove("/tmp/hvd_cpp_api_timeline.json");
}
