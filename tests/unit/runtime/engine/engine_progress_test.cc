// Names that stay in step and a set that cannot progress (docs/engine.md,
// "Unnamed ops" and "No progress"): the pure parts (queue naming, the
// watch, the message, the handle table's waited count) and whole engines
// with ranks as threads.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/engine/handle_table.h"
#include "runtime/engine/no_progress.h"
#include "runtime/engine/tensor_queue.h"
#include "tests/unit/runtime/engine/engine_world.h"

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;
using common::StatusCode;
using testing::EngineWorld;
using testing::on_ranks;
using testing::request;
using testing::submit;
using testing::WorldOptions;

Entry unnamed(OpType type = OpType::kAllreduce) {
  Entry e;
  e.request.op_type = type;
  return e;
}

Entry entry_named(const std::string& name) {
  Entry e = unnamed();
  e.request.name = name;
  return e;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tensor queue: unnamed ops are named at admission, per op type", "[names]") {
  TensorQueue q;
  Entry a = unnamed(), b = unnamed(), g = unnamed(OpType::kAllgather);
  REQUIRE(q.push(a).is_ok());
  REQUIRE(q.push(b).is_ok());
  REQUIRE(q.push(g).is_ok());
  std::vector<Entry> out;
  q.drain(out);
  REQUIRE(out.size() == 3);
  CHECK(out[0].request.name == "allreduce.noname.0");
  CHECK(out[1].request.name == "allreduce.noname.1");
  CHECK(out[2].request.name == "allgather.noname.0");
}

TEST_CASE("tensor queue: a refused op consumes no number", "[names]") {
  TensorQueue q;
  Entry join = unnamed(OpType::kJoin);
  REQUIRE(q.push(join).is_ok());
  Entry refused = unnamed();
  auto s = q.push(refused);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(contains(s.message(), "join() is pending on this rank"));
  CHECK(refused.request.name.empty());  // not consumed, not named
  std::vector<Entry> out;
  q.drain(out);
  REQUIRE(out.size() == 1);
  q.finish(out[0]);
  Entry next = unnamed();
  REQUIRE(q.push(next).is_ok());
  out.clear();
  q.drain(out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].request.name == "allreduce.noname.0");

  q.close(common::aborted("stopped"));
  Entry late = unnamed();
  CHECK(q.push(late).code() == StatusCode::kAborted);
  CHECK(late.request.name.empty());
}

TEST_CASE("tensor queue: groups take numbers together and get one group id", "[names]") {
  TensorQueue q;
  std::vector<Entry> group{unnamed(), unnamed(), unnamed(OpType::kAllgather)};
  REQUIRE(q.push_group(group).is_ok());
  Entry after = unnamed();
  REQUIRE(q.push(after).is_ok());
  std::vector<Entry> out;
  q.drain(out);
  REQUIRE(out.size() == 4);
  CHECK(out[0].request.name == "allreduce.noname.0");
  CHECK(out[1].request.name == "allreduce.noname.1");
  CHECK(out[2].request.name == "allgather.noname.0");
  CHECK(out[3].request.name == "allreduce.noname.2");
  CHECK(out[0].request.group_id >= 0);
  CHECK(out[0].request.group_id == out[2].request.group_id);
  CHECK(out[1].request.group_size == 3);
  CHECK(out[3].request.group_id == -1);

  // A refused group takes no numbers either.
  std::vector<Entry> clash{unnamed(), entry_named("allreduce.noname.0")};
  CHECK(q.push_group(clash).code() == StatusCode::kAlreadyExists);
  Entry next = unnamed();
  REQUIRE(q.push(next).is_ok());
  out.clear();
  q.drain(out);
  CHECK(out.back().request.name == "allreduce.noname.3");
}

TEST_CASE("tensor queue: restart_names numbers afresh in a new generation", "[names]") {
  TensorQueue q;
  Entry a = unnamed();
  REQUIRE(q.push(a).is_ok());
  q.restart_names(42);
  Entry b = unnamed(), c = unnamed(OpType::kBarrier);
  REQUIRE(q.push(b).is_ok());
  REQUIRE(q.push(c).is_ok());
  std::vector<Entry> out;
  q.drain(out);
  CHECK(out[1].request.name == "allreduce.noname.42.0");
  CHECK(out[2].request.name == "barrier.noname.42.0");
}

TEST_CASE("handle table: waited pending handles are counted per set", "[handle_table]") {
  HandleTable t;
  int64_t a = t.create(3), b = t.create(3), c = t.create(0);
  CHECK(t.waited_pending(3) == 0);
  CHECK(t.wait(a, std::chrono::duration<double>(0.01)).code() == StatusCode::kTimeout);
  CHECK(t.wait(a, std::chrono::duration<double>(0.01)).code() == StatusCode::kTimeout);
  CHECK(t.waited_pending(3) == 1);  // once per handle, however often waited on
  CHECK(t.waited_pending(0) == 0);
  (void)t.wait(b, std::chrono::duration<double>(0.01));
  CHECK(t.waited_pending(3) == 2);
  t.complete(a, common::Status::ok());
  CHECK(t.waited_pending(3) == 1);
  t.discard(b);
  CHECK(t.waited_pending(3) == 0);
  t.complete(c, common::Status::ok());
  CHECK(t.wait(c, std::nullopt).is_ok());  // a done handle is never counted
  CHECK(t.waited_pending(0) == 0);
}

TEST_CASE("no-progress watch: fires after the limit of blocked cycles, then starts over",
          "[no_progress]") {
  constexpr int64_t s = 1'000'000'000;
  NoProgressWatch w(std::chrono::seconds(2));
  CHECK_FALSE(w.observe(true, false, 0));
  CHECK_FALSE(w.observe(true, false, 1 * s));
  CHECK(w.observe(true, false, 2 * s));
  CHECK_FALSE(w.observe(true, false, 3 * s));  // a new stretch
  CHECK_FALSE(w.observe(true, true, 6 * s));   // progress resets it
  CHECK_FALSE(w.observe(true, false, 7 * s));
  CHECK_FALSE(w.observe(false, false, 10 * s));  // a rank not blocked resets it
  CHECK_FALSE(w.observe(true, false, 11 * s));
  CHECK(w.observe(true, false, 13 * s));

  NoProgressWatch off(std::chrono::seconds(0));
  CHECK_FALSE(off.observe(true, false, 0));
  CHECK_FALSE(off.observe(true, false, 100 * s));
}

TEST_CASE("no-progress message names each tensor and its ranks", "[no_progress]") {
  std::vector<PendingTensor> pending{{"a", {}, {1}, {0}}, {"b", {}, {0, 2}, {1}},
                                     {"g.0", {}, {}, {0, 1, 2}}};
  std::string m = no_progress_message(pending, "process set 3", std::chrono::seconds(10));
  CHECK(contains(m, "no progress for 10 s on process set 3"));
  CHECK(contains(m, "'a' submitted by rank 0, not by rank 1"));
  CHECK(contains(m, "'b' submitted by rank 1, not by ranks 0, 2"));
  CHECK(contains(m, "'g.0' submitted by ranks 0, 1, 2, waiting for the rest of its group"));
  CHECK(contains(m, "HVD_STALL_CHECK_NO_PROGRESS_SECONDS"));
}

TEST_CASE("engine: ranks waiting for different tensors fail everywhere, then pair up again",
          "[engine][no_progress]") {
  WorldOptions o;
  o.size = 3;
  o.engine.no_progress = std::chrono::seconds(1);
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(3, [&](int r) -> std::string {
    // Rank 2 skips the unnamed allreduce the others make: ranks 0 and 1
    // wait for allreduce.noname.0, rank 2 for allgather.noname.0.
    float x[2] = {1, 1};
    Request q = r == 2 ? request("", OpType::kAllgather, DataType::kFloat32, {2})
                       : request("", OpType::kAllreduce, DataType::kFloat32, {2});
    auto start = std::chrono::steady_clock::now();
    auto h = submit(w, r, q, x, r == 2 ? nullptr : x);
    if (!h.is_ok()) return h.status().to_string();
    common::Status s = testing::wait(w, r, h.value());
    auto took = std::chrono::steady_clock::now() - start;
    if (s.code() != StatusCode::kAborted) return "expected the no-progress error, got " + s.to_string();
    if (!contains(s.message(), "'allreduce.noname.0' submitted by ranks 0, 1, not by rank 2") ||
        !contains(s.message(), "'allgather.noname.0' submitted by rank 2, not by ranks 0, 1")) {
      return "message: " + s.message();
    }
    if (took > 8s) return "took too long";
    // Every rank numbers afresh: the next unnamed ops meet.
    float y[1] = {static_cast<float>(r)};
    auto h2 = submit(w, r, request("", OpType::kAllreduce, DataType::kFloat32, {1}), y, y);
    if (!h2.is_ok()) return h2.status().to_string();
    s = testing::wait(w, r, h2.value());
    if (!s.is_ok()) return "after: " + s.to_string();
    if (y[0] != 3.0f) return "after: sum " + std::to_string(y[0]);
    return "";
  }));
}

TEST_CASE("engine: a rank that is not waiting keeps the set from being declared stuck",
          "[engine][no_progress]") {
  WorldOptions o;
  o.size = 2;
  o.engine.no_progress = std::chrono::seconds(1);
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) -> std::string {
    // Each rank submits one tensor the other submits later; only rank 0 waits
    // meanwhile (rank 1 computes): slow, not stuck.
    float a[1] = {1}, b[1] = {1};
    const char* first = r == 0 ? "x" : "y";
    const char* second = r == 0 ? "y" : "x";
    auto h1 = submit(w, r, request(first, OpType::kAllreduce, DataType::kFloat32, {1}), a, a);
    if (!h1.is_ok()) return h1.status().to_string();
    if (r == 0) {
      common::Status s = w.handles(0).wait(h1.value(), std::chrono::duration<double>(2.5));
      if (s.code() != StatusCode::kTimeout) return "expected still pending, got " + s.to_string();
    } else {
      std::this_thread::sleep_for(2500ms);
    }
    auto h2 = submit(w, r, request(second, OpType::kAllreduce, DataType::kFloat32, {1}), b, b);
    if (!h2.is_ok()) return h2.status().to_string();
    common::Status s1 = testing::wait(w, r, h1.value());
    common::Status s2 = testing::wait(w, r, h2.value());
    if (!s1.is_ok() || !s2.is_ok()) return s1.to_string() + " / " + s2.to_string();
    if (a[0] != 2.0f || b[0] != 2.0f) return "wrong sums";
    return "";
  }));
}

TEST_CASE("engine: ops other than allreduce fail while a rank has joined; names realign after",
          "[engine][join]") {
  WorldOptions o;
  o.size = 2;
  EngineWorld w(o);
  CHECK_NO_PROBLEMS(on_ranks(2, [&](int r) -> std::string {
    float x[2] = {1, 2};
    if (r == 1) {
      for (OpType t : {OpType::kAllgather, OpType::kBroadcast, OpType::kReducescatter,
                       OpType::kAlltoall}) {
        Request q = request("", t, DataType::kFloat32, {2});
        q.root_rank = 1;
        bool in_place = t == OpType::kBroadcast;
        auto h = submit(w, r, q, x, in_place ? x : nullptr);
        if (!h.is_ok()) return h.status().to_string();
        common::Status s = testing::wait(w, r, h.value());
        if (s.code() != StatusCode::kFailedPrecondition ||
            !contains(s.message(), "is not supported with Join at this time") ||
            !contains(s.message(), "rank 0 has joined")) {
          return std::string(op_type_name(t)) + ": " + s.to_string();
        }
      }
    }
    Request join;
    join.op_type = OpType::kJoin;
    auto j = submit(w, r, join, nullptr, nullptr);
    if (!j.is_ok()) return j.status().to_string();
    common::Status s = testing::wait(w, r, j.value());
    if (!s.is_ok()) return "join: " + s.to_string();
    // Rank 1 made four unnamed calls rank 0 did not: after the join both
    // number afresh, so their next unnamed allgather meets.
    float mine[1] = {static_cast<float>(r)};
    auto g = submit(w, r, request("", OpType::kAllgather, DataType::kFloat32, {1}), mine, nullptr);
    if (!g.is_ok()) return g.status().to_string();
    s = testing::wait(w, r, g.value());
    if (!s.is_ok()) return "allgather after join: " + s.to_string();
    return "";
  }));
}

}  // namespace hvd::runtime::engine
