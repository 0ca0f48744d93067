#include "runtime/engine/tensor_queue.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;

Entry entry(const std::string& name, OpType type = OpType::kAllreduce) {
  Entry e;
  e.request.name = name;
  e.request.op_type = type;
  return e;
}

}  // namespace

TEST_CASE("tensor queue: drains in push order; names in flight are refused", "[tensor_queue]") {
  TensorQueue q;
  Entry a = entry("a"), b = entry("b");
  REQUIRE(q.push(a).is_ok());
  REQUIRE(q.push(b).is_ok());
  Entry again = entry("a");
  auto s = q.push(again);
  CHECK(s.code() == common::StatusCode::kAlreadyExists);
  CHECK(s.message() == "a tensor named 'a' is already in flight");
  CHECK(again.request.name == "a");  // not consumed

  std::vector<Entry> out;
  q.drain(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].request.name == "a");
  CHECK(out[1].request.name == "b");
  q.drain(out);
  CHECK(out.size() == 2);

  // Still in flight after draining, free once finished.
  CHECK_FALSE(q.push(again).is_ok());
  q.finish(out[0]);
  CHECK(q.push(again).is_ok());
}

TEST_CASE("tensor queue: one join at a time", "[tensor_queue]") {
  TensorQueue q;
  Entry j1 = entry("", OpType::kJoin), j2 = entry("", OpType::kJoin);
  REQUIRE(q.push(j1).is_ok());
  auto s = q.push(j2);
  CHECK(s.code() == common::StatusCode::kAlreadyExists);
  CHECK_THAT(s.message(), Catch::Contains("join"));
  std::vector<Entry> out;
  q.drain(out);
  q.finish(out[0]);
  CHECK(q.push(j2).is_ok());
}

TEST_CASE("tensor queue: groups go in whole or not at all", "[tensor_queue]") {
  TensorQueue q;
  Entry x = entry("x");
  REQUIRE(q.push(x).is_ok());
  std::vector<Entry> group{entry("g1"), entry("x")};
  CHECK(q.push_group(group).code() == common::StatusCode::kAlreadyExists);
  std::vector<Entry> twice{entry("g1"), entry("g1")};
  CHECK_THAT(q.push_group(twice).message(), Catch::Contains("twice"));
  std::vector<Entry> good{entry("g1"), entry("g2")};
  REQUIRE(q.push_group(good).is_ok());
  std::vector<Entry> out;
  q.drain(out);
  REQUIRE(out.size() == 3);
  CHECK(out[1].request.name == "g1");
  CHECK(out[2].request.name == "g2");
}

TEST_CASE("tensor queue: a closed queue refuses with its reason", "[tensor_queue]") {
  TensorQueue q;
  q.close(common::aborted("hvd is shutting down"));
  q.close(common::aborted("second reason is ignored"));
  CHECK(q.closed());
  Entry a = entry("a");
  auto s = q.push(a);
  CHECK(s.code() == common::StatusCode::kAborted);
  CHECK(s.message() == "hvd is shutting down");
}

TEST_CASE("tensor queue: wait sleeps to the deadline, wakes for work or interrupt", "[tensor_queue]") {
  TensorQueue q;
  auto start = Clock::now();
  q.wait(start + 50ms, true);
  CHECK(Clock::now() - start >= 50ms);

  std::thread pusher([&] {
    std::this_thread::sleep_for(30ms);
    Entry e = entry("w");
    (void)q.push(e);
  });
  start = Clock::now();
  q.wait(start + 10s, true);
  CHECK(Clock::now() - start < 5s);
  pusher.join();

  // Work queued does not cut a wait that ignores work short.
  start = Clock::now();
  q.wait(start + 40ms, false);
  CHECK(Clock::now() - start >= 40ms);

  std::thread stopper([&] {
    std::this_thread::sleep_for(30ms);
    q.interrupt();
  });
  start = Clock::now();
  q.wait(start + 10s, false);
  CHECK(Clock::now() - start < 5s);
  stopper.join();
  start = Clock::now();
  q.wait(start + 10s, false);  // interrupted for good
  CHECK(Clock::now() - start < 1s);
}

TEST_CASE("tensor queue: the batching window waits for a quiet queue, at most `longest`",
          "[tensor_queue]") {
  TensorQueue q;
  auto start = Clock::now();
  q.wait_quiet(10s, 10s);  // nothing queued: no window
  CHECK(Clock::now() - start < 1s);
  CHECK_FALSE(q.has_work());

  Entry a = entry("a");
  REQUIRE(q.push(a).is_ok());
  CHECK(q.has_work());
  start = Clock::now();
  q.wait_quiet(30ms, 10s);  // quiet 30 ms after the push
  CHECK(Clock::now() - start < 5s);
  start = Clock::now();
  q.wait_quiet(20us, 10s);  // shorter than a timed sleep's slack: yields, then ends
  CHECK(Clock::now() - start < 1s);

  // Never quiet enough: `longest` after the oldest queued entry ends it.
  std::atomic<bool> pushing{true};
  std::thread pusher([&] {
    for (int i = 0; pushing.load(); ++i) {
      Entry e = entry("p" + std::to_string(i));
      (void)q.push(e);
      std::this_thread::sleep_for(2ms);
    }
  });
  start = Clock::now();
  q.wait_quiet(10s, 100ms);
  CHECK(Clock::now() - start < 5s);
  pushing.store(false);
  pusher.join();

  std::vector<Entry> out;
  q.drain(out);
  CHECK_FALSE(q.has_work());
  Entry b = entry("b");
  REQUIRE(q.push(b).is_ok());
  q.interrupt();  // an interrupt ends the window at once
  start = Clock::now();
  q.wait_quiet(10s, 10s);
  CHECK(Clock::now() - start < 1s);
}

TEST_CASE("tensor queue: finish counts ops by type, bytes and allreduce latency",
          "[tensor_queue][metrics]") {
  TensorQueue q;
  OpCounters counters;
  q.count_into(&counters);
  Entry a = entry("a");
  a.request.shape = {256};  // 1 KiB of float32
  Entry b = entry("b", OpType::kBroadcast);
  b.request.shape = {4};
  REQUIRE(q.push(a).is_ok());
  REQUIRE(q.push(b).is_ok());
  std::vector<Entry> out;
  q.drain(out);
  out[0].enqueued = Clock::now() - 3ms;  // between the 2.5 ms and 5 ms bounds
  q.finish(out[0]);
  q.finish(out[1]);
  const OpStats s = counters.snapshot();
  CHECK(s.completed[0] == 1);
  CHECK(s.bytes[0] == 1024);
  CHECK(s.completed[static_cast<size_t>(OpType::kBroadcast)] == 1);
  CHECK(s.bytes[static_cast<size_t>(OpType::kBroadcast)] == 16);
  // Only allreduce latencies are timed: one op, in the (2.5 ms, 5 ms] bucket.
  int64_t timed = 0;
  for (int64_t n : s.latency_buckets) timed += n;
  CHECK(timed == 1);
  CHECK(s.latency_buckets[6] == 1);  // kLatencyBounds[6] == 0.005
  CHECK(s.latency_sum_ns >= 3'000'000);
}

}  // namespace hvd::runtime::engine
