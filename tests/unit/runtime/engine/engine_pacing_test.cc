// The engine's pacing (docs/engine.md, "A cycle"): no latency floor, a
// batching window bounded by the cycle time, and an idle or stuck set that
// does not spin. Checked through behaviour and engine counters, never tight
// timings: a cycle time of 10 s makes "no floor" visible with bounds of
// seconds.
#include <catch2/catch.hpp>

#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "engine_world.h"

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;
using testing::EngineWorld;
using testing::on_ranks;
using testing::request;
using testing::submit;
using testing::WorldOptions;

// One rank's allreduces of 4 floats (r + 1 each) in flight: enqueue, then
// wait for all and check the sums (2 ranks: 3).
class Ops {
 public:
  Ops(EngineWorld& w, int r) : w_(w), r_(r) {}

  std::string enqueue(const std::vector<std::string>& names, int64_t elements = 4) {
    for (const std::string& name : names) {
      data_.emplace_back(elements, r_ + 1.0f);  // a deque: earlier buffers stay put
      auto h = submit(w_, r_, request(name, OpType::kAllreduce, DataType::kFloat32, {elements}),
                      data_.back().data(), data_.back().data());
      if (!h.is_ok()) return "enqueue " + name + ": " + h.status().to_string();
      handles_.push_back(h.value());
    }
    return "";
  }

  std::string wait() {
    for (size_t i = 0; i < handles_.size(); ++i) {
      auto s = testing::wait(w_, r_, handles_[i]);
      if (!s.is_ok()) return s.to_string();
      if (data_[i][0] != 3.0f) return "got " + std::to_string(data_[i][0]);
      (void)w_.handles(r_).release(handles_[i]);
    }
    data_.clear();
    handles_.clear();
    return "";
  }

  std::string run(const std::vector<std::string>& names) {
    std::string p = enqueue(names);
    return p.empty() ? wait() : p;
  }

 private:
  EngineWorld& w_;
  int r_;
  std::deque<std::vector<float>> data_;
  std::vector<int64_t> handles_;
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<std::string> names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

}  // namespace

TEST_CASE("pacing: a lone op is negotiated on its enqueue, not after a cycle", "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 10'000;  // a floor of one cycle would take 10 s per op
  EngineWorld w(o);
  const Clock::time_point start = Clock::now();
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
    for (int i = 0; i < 5; ++i) {
      std::string p = Ops(w, r).run({"lone"});  // the same name: later steps are cache hits
      if (!p.empty()) return "step " + std::to_string(i) + ": " + p;
    }
    return std::string();
  }));
  CHECK(seconds_since(start) < 5.0);
  EngineStats s = w.engine(0).stats();
  CHECK(s.responses == 5);
  CHECK(s.cache_hits == 4);  // repeated steps take the bit-vector path
  CHECK(s.payload_exchanges <= 2);  // 2: a rank came by its start-up exchange without it
}

TEST_CASE("pacing: a rank waiting for an idle peer meets it as soon as it enqueues",
          "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 10'000;
  o.engine.batch_quiet = 50ms;  // both of rank 0's ops surely go in one exchange
  EngineWorld w(o);
  const Clock::time_point start = Clock::now();
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
    Ops ops(w, r);
    // "late" waits for rank 1 after "first" ran: rank 1 then holds nothing.
    if (r == 0) return ops.run({"first", "late"});
    std::string p = ops.run({"first"});
    if (!p.empty()) return p;
    std::this_thread::sleep_for(200ms);
    return ops.run({"late"});
  }));
  CHECK(seconds_since(start) < 5.0);
}

TEST_CASE("pacing: ranks waiting for each other wake on new work", "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 10'000;
  EngineWorld w(o);
  const Clock::time_point start = Clock::now();
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
    Ops ops(w, r);
    // Rank 0 holds "a", rank 1 "b": every rank waits on the other until the
    // second enqueue of each.
    std::string p = ops.enqueue({r == 0 ? "a" : "b"});
    if (!p.empty()) return p;
    std::this_thread::sleep_for(r == 0 ? 100ms : 300ms);
    return ops.run({r == 0 ? "b" : "a"});
  }));
  CHECK(seconds_since(start) < 5.0);
}

TEST_CASE("pacing: ops enqueued together are negotiated and fused together", "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 10'000;
  o.engine.batch_quiet = 50ms;  // robust against a preempted enqueuing thread
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return Ops(w, r).run({"warm-up"}); }));
  EngineStats before = w.engine(0).stats();
  const Clock::time_point start = Clock::now();
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return Ops(w, r).run(names("burst", 40)); }));
  CHECK(seconds_since(start) < 5.0);
  EngineStats after = w.engine(0).stats();
  CHECK(after.responses - before.responses == 40);
  CHECK(after.data_calls - before.data_calls <= 2);
  CHECK(after.fused_tensors - before.fused_tensors >= 20);
}

TEST_CASE("pacing: a backward pass of 161 tensors still fuses with the default window",
          "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;  // default cycle time and batching window
  EngineWorld w(o);
  const std::vector<std::string> grads = names("grad", 161);  // ResNet-50's count
  for (int step = 0; step < 2; ++step) {  // the second step through the cache
    EngineStats before = w.engine(0).stats();
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return Ops(w, r).run(grads); }));
    EngineStats after = w.engine(0).stats();
    INFO("step " << step);
    CHECK(after.responses - before.responses == 161);
    // One call here when quiet; a preempted enqueuing thread may split it.
    CHECK(after.data_calls - before.data_calls <= 8);
    CHECK(after.fused_tensors - before.fused_tensors >= 140);
    if (step == 1) CHECK(after.cache_hits - before.cache_hits == 161);
  }
}

TEST_CASE("fusion: on shm allreduces of 256 KiB or more run alone, in place; on gloo they fuse",
          "[engine][pacing]") {
  for (const char* transport : {"shm", "gloo"}) {
    WorldOptions o;
    o.size = 2;
    o.transport = transport;
    o.engine.cycle_time_ms = 10'000;
    o.engine.batch_quiet = 50ms;  // robust against a preempted enqueuing thread
    EngineWorld w(o);
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return Ops(w, r).run({"warm-up"}); }));
    EngineStats before = w.engine(0).stats();
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
      Ops ops(w, r);
      std::string p = ops.enqueue(names("small", 6));
      if (p.empty()) p = ops.enqueue(names("large", 3), 64 << 10);  // 256 KiB each
      return p.empty() ? ops.wait() : p;
    }));
    EngineStats after = w.engine(0).stats();
    INFO(transport);
    CHECK(after.responses - before.responses == 9);
    if (std::string(transport) == "shm") {
      CHECK(after.data_calls - before.data_calls >= 4);  // each large one alone
      CHECK(after.fused_tensors - before.fused_tensors <= 6);
    } else {
      CHECK(after.data_calls - before.data_calls <= 2);
      CHECK(after.fused_tensors - before.fused_tensors >= 8);
    }
  }
}

TEST_CASE("pacing: the batching window ends at the cycle time", "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 300;
  o.engine.batch_quiet = 60s;  // never quiet enough: the cycle time bounds the window
  EngineWorld w(o);
  const Clock::time_point start = Clock::now();
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return Ops(w, r).run({"bounded"}); }));
  CHECK(seconds_since(start) < 5.0);
}

TEST_CASE("pacing: an idle set and a stuck set do not spin", "[engine][pacing]") {
  WorldOptions o;
  o.size = 2;
  o.engine.cycle_time_ms = 10;
  EngineWorld w(o);
  // Idle: about one exchange per idle_wake (100 ms).
  std::this_thread::sleep_for(500ms);
  CHECK(w.engine(0).stats().cycles <= 12);

  // Stuck: every rank waits for a tensor the other has not enqueued; at
  // most one exchange per cycle time (10 ms), not one after another.
  std::vector<Ops> ops{Ops(w, 0), Ops(w, 1)};
  REQUIRE(ops[0].enqueue({"x"}) == "");
  REQUIRE(ops[1].enqueue({"y"}) == "");
  std::this_thread::sleep_for(100ms);
  int64_t cycles = w.engine(0).stats().cycles;
  std::this_thread::sleep_for(500ms);
  CHECK(w.engine(0).stats().cycles - cycles <= 60);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
    return ops[static_cast<size_t>(r)].run({r == 0 ? "y" : "x"});
  }));
}

}  // namespace hvd::runtime::engine
