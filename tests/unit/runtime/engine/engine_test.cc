// The engine end to end inside one process: ranks as threads, each with its
// own SetEngine over a gloo transport (engine_world.h). Covers the
// controller's decisions (enqueue orders, cache, fusion, mismatches, joins,
// stalls), process sets running side by side, and failures that must not hang.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "engine_world.h"
#include "runtime/engine/timeline.h"

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;
using common::StatusCode;
using testing::EngineWorld;
using testing::on_ranks;
using testing::request;
using testing::submit;
using testing::WorldOptions;

// Allreduces `names` (in the given order) on rank r, every element r + 1;
// checks the sums once all are done.
std::string allreduce_all(EngineWorld& w, int r, const std::vector<std::string>& names,
                          int64_t elements = 4) {
  std::vector<std::vector<float>> data(names.size(), std::vector<float>(static_cast<size_t>(elements), r + 1.0f));
  std::vector<int64_t> handles;
  for (size_t i = 0; i < names.size(); ++i) {
    auto h = submit(w, r, request(names[i], OpType::kAllreduce, DataType::kFloat32, {elements}),
                    data[i].data(), data[i].data());
    if (!h.is_ok()) return "enqueue " + names[i] + ": " + h.status().to_string();
    handles.push_back(h.value());
  }
  const float want = static_cast<float>(w.size() * (w.size() + 1) / 2);
  for (size_t i = 0; i < names.size(); ++i) {
    auto s = testing::wait(w, r, handles[i]);
    if (!s.is_ok()) return names[i] + ": " + s.to_string();
    if (data[i].back() != want) return names[i] + ": got " + std::to_string(data[i].back());
    (void)w.handles(r).release(handles[i]);
  }
  return "";
}

std::vector<std::string> names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// A transport that dies when asked: the next call closes its connections
// (as a killed process's would be) and fails.
class DyingTransport final : public transports::Transport {
 public:
  DyingTransport(std::unique_ptr<transports::Transport> inner, std::atomic<bool>& die)
      : inner_(std::move(inner)), die_(die), rank_(inner_->rank()), size_(inner_->size()) {}
  std::string_view name() const override { return "dying"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  common::Status allreduce(transports::Buffer d, DataType t, ReduceOp op) override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->allreduce(d, t, op);
  }
  common::Status allgatherv(transports::ConstBuffer in, transports::Buffer out,
                            std::span<const int64_t> counts) override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->allgatherv(in, out, counts);
  }
  common::Status broadcast(transports::Buffer d, int root) override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->broadcast(d, root);
  }
  common::Status alltoallv(transports::ConstBuffer in, std::span<const int64_t> s,
                           transports::Buffer out, std::span<const int64_t> r) override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->alltoallv(in, s, out, r);
  }
  common::Status reducescatter(transports::ConstBuffer in, transports::Buffer out,
                               std::span<const int64_t> r, DataType t, ReduceOp op) override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->reducescatter(in, out, r, t, op);
  }
  common::Status barrier() override {
    HVD_RETURN_IF_ERROR(check());
    return inner_->barrier();
  }
  void abort(common::Status reason) override {
    if (inner_) inner_->abort(std::move(reason));
  }

 private:
  common::Status check() {
    if (die_.load()) inner_.reset();
    if (!inner_) return common::unavailable("this rank died");
    return common::Status::ok();
  }
  std::unique_ptr<transports::Transport> inner_;
  std::atomic<bool>& die_;
  int rank_;
  int size_;
};

}  // namespace

TEST_CASE("engine: ranks may enqueue in different orders", "[engine]") {
  WorldOptions o;
  o.size = 3;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) {
    auto all = names("t", 12);
    std::rotate(all.begin(), all.begin() + r * 5, all.end());
    if (r == 1) std::reverse(all.begin(), all.end());
    return allreduce_all(w, r, all);
  }));
}

TEST_CASE("engine: announcements too big for the header take a second exchange", "[engine]") {
  WorldOptions o;
  o.size = 3;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"short"}); }));
  EngineStats small = w.engine(0).stats();
  CHECK(small.payload_exchanges > 0);
  CHECK(small.large_payloads == 0);
  std::string long_name(400, 'n');
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {long_name}); }));
  CHECK(w.engine(0).stats().large_payloads > 0);
}

TEST_CASE("engine: a repeated step is agreed through cache bits alone", "[engine]") {
  WorldOptions o;
  o.size = 2;
  EngineWorld w(o);
  auto step = names("grad", 6);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, step); }));
  EngineStats before = w.engine(0).stats();
  CHECK(before.payload_exchanges > 0);
  for (int i = 0; i < 3; ++i) {
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) {
      auto mine = step;
      if (r == 1) std::reverse(mine.begin(), mine.end());
      return allreduce_all(w, r, mine);
    }));
  }
  EngineStats after = w.engine(0).stats();
  CHECK(after.payload_exchanges == before.payload_exchanges);
  CHECK(after.cache_hits == before.cache_hits + 3 * 6);
  CHECK(w.engine(1).stats().cache_hits == after.cache_hits);
}

TEST_CASE("engine: a changed signature retires the cached slot", "[engine]") {
  WorldOptions o;
  o.size = 2;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"w"}, 4); }));
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"w"}, 4); }));
  int64_t hits = w.engine(0).stats().cache_hits;
  CHECK(hits == 1);
  // Same name, new shape on every rank: negotiated in full again, and right.
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"w"}, 9); }));
  CHECK(w.engine(0).stats().cache_hits == hits);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"w"}, 9); }));
  CHECK(w.engine(0).stats().cache_hits == hits + 1);
}

TEST_CASE("engine: a cache of two evicts and stays consistent", "[engine]") {
  WorldOptions o;
  o.size = 3;
  o.engine.cache_capacity = 2;
  EngineWorld w(o);
  auto three = names("e", 3);
  for (int step = 0; step < 4; ++step) {
    int64_t payloads = w.engine(0).stats().payload_exchanges;
    CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) {
      // One tensor at a time, in an order that changes every step.
      for (int k = 0; k < 3; ++k) {
        std::string p = allreduce_all(w, r, {three[static_cast<size_t>((k + step) % 3)]});
        if (!p.empty()) return p;
      }
      return std::string();
    }));
    // Three names through two slots: something is always re-negotiated.
    if (step > 0) CHECK(w.engine(0).stats().payload_exchanges > payloads);
  }
  // Two names fit: the next steps are hits only.
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"f0", "f1"}); }));
  EngineStats before = w.engine(0).stats();
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"f0", "f1"}); }));
  CHECK(w.engine(0).stats().payload_exchanges == before.payload_exchanges);
  CHECK(w.engine(0).stats().cache_hits == before.cache_hits + 2);
}

TEST_CASE("engine: small tensors are fused into fewer transport calls", "[engine]") {
  for (int64_t threshold : {int64_t{64} << 20, int64_t{0}}) {
    WorldOptions o;
    o.size = 2;
    o.engine.fusion_threshold = threshold;
    o.engine.cycle_time_ms = 20;  // plenty of time for all 40 to arrive in one cycle
    EngineWorld w(o);
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"warm-up"}); }));
    EngineStats before = w.engine(0).stats();
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, names("small", 40), 3); }));
    EngineStats after = w.engine(0).stats();
    INFO("threshold " << threshold);
    if (threshold > 0) {
      CHECK(after.data_calls - before.data_calls <= 10);
      CHECK(after.fused_tensors - before.fused_tensors >= 30);
    } else {
      CHECK(after.data_calls - before.data_calls == 40);
      CHECK(after.fused_tensors == before.fused_tensors);
    }
  }
}

TEST_CASE("engine: mismatches fail on every rank, naming ranks and values", "[engine]") {
  WorldOptions o;
  o.size = 3;
  EngineWorld w(o);
  struct Case {
    const char* field;
    std::function<Request(int)> make;
    std::string fragment;
  };
  std::vector<Case> cases{
      {"shape",
       [](int r) {
         return request("m.shape", OpType::kAllreduce, DataType::kFloat32, {4, r == 1 ? 3 : 2});
       },
       "mismatched shape for tensor 'm.shape': ranks 0, 2 [4, 2], rank 1 [4, 3]"},
      {"dtype",
       [](int r) {
         return request("m.dtype", OpType::kAllreduce, r == 0 ? DataType::kFloat32 : DataType::kInt32, {4});
       },
       "mismatched dtype for tensor 'm.dtype': rank 0 float32, ranks 1, 2 int32"},
      {"op",
       [](int r) {
         return request("m.op", OpType::kAllreduce, DataType::kFloat32, {4},
                        r == 2 ? ReduceOp::kMax : ReduceOp::kSum);
       },
       "mismatched reduce op for tensor 'm.op': ranks 0, 1 sum, rank 2 max"},
      {"root",
       [](int r) {
         Request q = request("m.root", OpType::kBroadcast, DataType::kFloat32, {4});
         q.root_rank = r == 0 ? 0 : 1;
         return q;
       },
       "mismatched root rank for tensor 'm.root': rank 0 0, ranks 1, 2 1"},
  };
  for (const Case& c : cases) {
    INFO(c.field);
    CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) -> std::string {
      std::vector<float> buf(8, 1.0f);
      auto h = submit(w, r, c.make(r), buf.data(), buf.data());
      if (!h.is_ok()) return h.status().to_string();
      auto s = testing::wait(w, r, h.value());
      if (s.code() != StatusCode::kInvalidArgument || s.message() != c.fragment) {
        return "got " + s.to_string();
      }
      return "";
    }));
  }
  // The engine goes on after mismatches.
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"after"}); }));
}

TEST_CASE("engine: a second op with a pending name is refused at once", "[engine]") {
  WorldOptions o;
  o.size = 2;
  EngineWorld w(o);
  float a = 1, b = 2;
  auto first = submit(w, 0, request("dup", OpType::kAllreduce, DataType::kFloat32, {1}), &a, &a);
  REQUIRE(first.is_ok());
  auto second = submit(w, 0, request("dup", OpType::kAllreduce, DataType::kFloat32, {1}), &b, &b);
  CHECK(second.status().code() == StatusCode::kAlreadyExists);
  CHECK(second.status().message() == "a tensor named 'dup' is already in flight");
  float c = 5;
  auto other = submit(w, 1, request("dup", OpType::kAllreduce, DataType::kFloat32, {1}), &c, &c);
  REQUIRE(other.is_ok());
  CHECK(testing::wait(w, 0, first.value()).is_ok());
  CHECK(testing::wait(w, 1, other.value()).is_ok());
  CHECK(a == 6);
}

TEST_CASE("engine: join lets the others go on; the last to join is reported", "[engine]") {
  WorldOptions o;
  o.size = 3;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) -> std::string {
    for (int step = 0; step <= r; ++step) {
      std::vector<double> v(5, 2.0);
      ReduceOp op = step == 1 ? ReduceOp::kAverage : ReduceOp::kSum;
      auto h = submit(w, r, request("step" + std::to_string(step), OpType::kAllreduce,
                                    DataType::kFloat64, {5}, op),
                      v.data(), v.data());
      if (!h.is_ok()) return h.status().to_string();
      auto s = testing::wait(w, r, h.value());
      if (!s.is_ok()) return s.to_string();
      double contributors = 3 - step;  // joined ranks add zeros
      double want = op == ReduceOp::kSum ? 2 * contributors : 2 * contributors / 3;
      if (v[4] != want) return "step " + std::to_string(step) + ": got " + std::to_string(v[4]);
    }
    if (r == 2) std::this_thread::sleep_for(200ms);
    Request join;
    join.op_type = OpType::kJoin;
    auto h = submit(w, r, join, nullptr, nullptr);
    if (!h.is_ok()) return h.status().to_string();
    auto s = testing::wait(w, r, h.value());
    if (!s.is_ok()) return "join: " + s.to_string();
    int32_t last = -1;
    (void)w.handles(r).inspect(h.value(), [&](const FinishedOp& op) {
      last = op.output.join_last_rank;
      return common::Status::ok();
    });
    if (last != 2) return "join reported rank " + std::to_string(last);
    return "";
  }));
  // Everyone is back: ops need every rank again.
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"after-join"}); }));
}

TEST_CASE("engine: gathers with uneven first dimensions, and groups", "[engine]") {
  WorldOptions o;
  o.size = 3;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) -> std::string {
    std::vector<int32_t> mine(static_cast<size_t>(2 * r), r);
    std::vector<int32_t> other(3, 10 + r);
    auto hs = testing::submit_group(
        w, r,
        {request("g.uneven", OpType::kAllgather, DataType::kInt32, {r, 2}),
         request("g.even", OpType::kAllgather, DataType::kInt32, {3})},
        {mine.data(), other.data()}, {nullptr, nullptr});
    if (!hs.is_ok()) return hs.status().to_string();
    auto s = testing::wait(w, r, hs.value()[0]);
    if (!s.is_ok()) return s.to_string();
    if (!w.handles(r).poll(hs.value()[1]).value()) return "group members completed apart";
    std::vector<int64_t> shape;
    std::vector<int32_t> out;
    (void)w.handles(r).inspect(hs.value()[0], [&](const FinishedOp& op) {
      shape = op.output.shape;
      const auto* p = reinterpret_cast<const int32_t*>(op.output.data.get());
      out.assign(p, p + op.output.bytes / 4);
      return common::Status::ok();
    });
    if (shape != std::vector<int64_t>{0 + 1 + 2, 2}) return "allgather shape";
    if (out != std::vector<int32_t>{1, 1, 2, 2, 2, 2}) return "allgather data";
    return "";
  }));
}

TEST_CASE("engine: two disjoint process sets run side by side", "[engine]") {
  daemon::KvStore store;
  WorldOptions a;
  a.size = 2;
  a.global_ranks = {0, 2};
  a.key_prefix = "ps1/";
  a.engine.process_set_id = 1;
  WorldOptions b = a;
  b.global_ranks = {1, 3};
  b.key_prefix = "ps2/";
  b.engine.process_set_id = 2;
  std::unique_ptr<EngineWorld> set_a, set_b;
  std::thread make_a([&] { set_a = std::make_unique<EngineWorld>(a, store); });
  std::thread make_b([&] { set_b = std::make_unique<EngineWorld>(b, store); });
  make_a.join();
  make_b.join();
  std::atomic<bool> b_done{false};
  CHECK_NO_PROBLEMS(on_ranks(4, [&](int r) -> std::string {
    EngineWorld& w = r < 2 ? *set_a : *set_b;
    int rank = r % 2;
    if (r < 2) {
      // Set 1 is held up (its rank 1 arrives late) while set 2 works.
      if (rank == 1) std::this_thread::sleep_for(300ms);
      std::string p = allreduce_all(w, rank, {"held"});
      if (!p.empty()) return p;
      if (rank == 1 && !b_done.load()) return "set 2 waited for set 1";
      return "";
    }
    for (int i = 0; i < 10; ++i) {
      std::string p = allreduce_all(w, rank, {"busy" + std::to_string(i)});
      if (!p.empty()) return p;
    }
    b_done = true;
    return "";
  }));
}

TEST_CASE("engine: a dead rank fails pending ops within the transport timeout", "[engine]") {
  std::atomic<bool> die{false};
  WorldOptions o;
  o.size = 2;
  o.transport_timeout = 2000ms;
  o.wrap = [&](int r, std::unique_ptr<transports::Transport> t) -> std::unique_ptr<transports::Transport> {
    if (r != 1) return t;
    return std::make_unique<DyingTransport>(std::move(t), die);
  };
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"alive"}); }));
  float x = 1;
  auto h = submit(w, 0, request("orphan", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  REQUIRE(h.is_ok());
  auto start = std::chrono::steady_clock::now();
  die = true;
  auto s = testing::wait(w, 0, h.value());
  auto took = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(s.is_ok());
  CHECK(s.code() != StatusCode::kTimeout);  // the op failed; the wait itself did not time out
  CHECK(took < 5s);
  // The engine stays failed: later ops are refused at once, with the same error.
  auto later = submit(w, 0, request("later", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  CHECK_FALSE(later.is_ok());
  CHECK(later.status().message() == s.message());
}

TEST_CASE("engine: stopping fails what is pending, on every rank", "[engine]") {
  WorldOptions o;
  o.size = 2;
  EngineWorld w(o);
  float x = 1;
  auto h = submit(w, 0, request("never", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  REQUIRE(h.is_ok());
  float y = 1;
  auto g = submit(w, 1, request("also-never", OpType::kAllreduce, DataType::kFloat32, {1}), &y, &y);
  REQUIRE(g.is_ok());
  std::this_thread::sleep_for(20ms);
  w.stop(0);
  auto s = testing::wait(w, 0, h.value());
  CHECK(s.code() == StatusCode::kAborted);
  CHECK(s.message() == "hvd is shutting down");
  auto t = testing::wait(w, 1, g.value());
  CHECK(t.code() == StatusCode::kAborted);
  CHECK(t.message() == "hvd is shutting down on rank 0");
  auto refused = submit(w, 1, request("after", OpType::kAllreduce, DataType::kFloat32, {1}), &y, &y);
  CHECK(refused.status().code() == StatusCode::kAborted);
}

TEST_CASE("engine: a stalled tensor fails on every rank that holds it", "[engine]") {
  WorldOptions o;
  o.size = 3;
  o.engine.stall_warning = 1s;
  o.engine.stall_shutdown = 1s;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"cached"}); }));
  for (const char* name : {"fresh", "cached"}) {  // negotiated in full, and through the cache
    INFO(name);
    CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) -> std::string {
      if (r == 2) return "";  // never submits it
      float x = 1;
      auto h = submit(w, r, request(name, OpType::kAllreduce, DataType::kFloat32, {4}), &x, &x);
      if (!h.is_ok()) return h.status().to_string();
      auto start = std::chrono::steady_clock::now();
      auto s = testing::wait(w, r, h.value());
      if (s.code() != StatusCode::kTimeout || s.message().find("stalled: rank 2 did not submit") == std::string::npos) {
        return "got " + s.to_string();
      }
      if (std::chrono::steady_clock::now() - start > 5s) return "took too long";
      return "";
    }));
  }
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) { return allreduce_all(w, r, {"after-stall"}); }));
}

TEST_CASE("engine: the timeline shows each tensor's phases", "[engine]") {
  char dir[] = "/tmp/hvd_engine_timeline_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/timeline.json";
  ActiveTimeline active;
  {
    WorldOptions o;
    o.size = 2;
    o.timeline_rank = 0;
    o.timeline = &active;
    EngineWorld w(o);
    auto opened = Timeline::open(path, 0);
    REQUIRE(opened.is_ok());
    active.exchange(std::shared_ptr<Timeline>(std::move(opened).value()));  // while the engines run
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, names("tl", 5)); }));
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"single"}, 1000); }));
    active.exchange(nullptr);  // stopped while the engines run
    CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) { return allreduce_all(w, r, {"untraced"}); }));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  for (const char* phase : {"NEGOTIATE", "QUEUE", "MEMCPY_IN_FUSION_BUFFER", "ALLREDUCE",
                            "MEMCPY_OUT_FUSION_BUFFER", "CYCLE", "tl3", "single"}) {
    INFO(phase);
    CHECK(json.find(phase) != std::string::npos);
  }
  CHECK(json.find("untraced") == std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace hvd::runtime::engine
