// SetEngine::abort and on_transport_failure (docs/engine.md, "Abort"), ranks
// as threads (engine_world.h): an aborted engine fails what it holds at once,
// without an exchange; a set whose transport fails reports it, so that the
// runtime can abort the other sets. The no-progress check is off, so only an
// abort can end the ops below early; every wait has a deadline.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "engine_world.h"

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;
using common::Status;
using common::StatusCode;
using testing::EngineWorld;
using testing::request;
using testing::submit;
using testing::WorldOptions;
using Clock = std::chrono::steady_clock;

// What on_transport_failure was called with, from any engine thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> messages;
  void add(const Status& s) {
    std::lock_guard lock(mu);
    messages.push_back(s.to_string());
  }
  std::vector<std::string> all() {
    std::lock_guard lock(mu);
    return messages;
  }
};

WorldOptions abort_world(const std::string& key_prefix) {
  WorldOptions o;
  o.size = 2;
  o.key_prefix = key_prefix;
  o.transport_timeout = 20000ms;  // an op that ends well before did not wait for it
  o.engine.no_progress = std::chrono::seconds(0);
  return o;
}

}  // namespace

TEST_CASE("engine abort: pending and later ops fail at once; peers report the failure",
          "[engine][abort]") {
  Failures failures;
  WorldOptions o = abort_world("abort-one/");
  o.engine.on_transport_failure = [&](const Status& s) { failures.add(s); };
  EngineWorld w(o);
  float x = 1;
  auto h = submit(w, 0, request("only-rank-0", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  REQUIRE(h.is_ok());
  std::this_thread::sleep_for(200ms);  // negotiating: rank 1 never submits it

  const Status reason = common::unavailable("membership changed: rank 1 was removed");
  auto aborted_at = Clock::now();
  w.engine(0).abort(reason);
  w.engine(0).abort(common::aborted("a second reason"));  // the first one wins
  auto s = testing::wait(w, 0, h.value());
  CHECK(Clock::now() - aborted_at < 1s);
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message() == reason.message());
  auto later = submit(w, 0, request("later", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  CHECK(later.status().code() == StatusCode::kUnavailable);
  CHECK(later.status().message() == reason.message());

  // Rank 1 sees rank 0's sockets go: its engine fails and reports it; the
  // aborted rank 0 reports nothing.
  float y = 1;
  auto g = submit(w, 1, request("only-rank-1", OpType::kAllreduce, DataType::kFloat32, {1}), &y, &y);
  if (g.is_ok()) {
    auto t = testing::wait(w, 1, g.value());
    CHECK_FALSE(t.is_ok());
    CHECK(t.code() != StatusCode::kTimeout);
  }
  auto deadline = Clock::now() + 5s;
  while (failures.all().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  auto reported = failures.all();
  INFO(Catch::Detail::stringify(reported));
  REQUIRE(reported.size() == 1);
  CHECK(reported[0].find("rank 1 of 2") != std::string::npos);

  // Stopping an aborted engine takes no exchange.
  auto stop_at = Clock::now();
  w.stop(0);
  CHECK(Clock::now() - stop_at < 500ms);
}

TEST_CASE("engine abort: a failed set's report aborts another set's blocked op",
          "[engine][abort]") {
  // Two sets over the same two ranks. Rank 0 waits in set B on an op rank 1
  // never submits (rank 1's B engine stays alive and idle); rank 1's A
  // engine is aborted, so rank 0's A fails and reports it, and the report
  // aborts rank 0's B, as the runtime does.
  daemon::KvStore store;
  Failures failures;
  WorldOptions b = abort_world("abort-b/");
  EngineWorld wb(b, store);
  const Status world_gone = common::aborted("hvd was aborted on rank 0: set A failed");
  WorldOptions a = abort_world("abort-a/");
  a.engine.on_transport_failure = [&](const Status& s) {
    failures.add(s);
    wb.engine(0).abort(world_gone);
  };
  EngineWorld wa(a, store);

  float x = 1;
  auto h = submit(wb, 0, request("only-rank-0", OpType::kAllreduce, DataType::kFloat32, {1}), &x, &x);
  REQUIRE(h.is_ok());
  std::this_thread::sleep_for(200ms);
  auto aborted_at = Clock::now();
  wa.engine(1).abort(common::aborted("rank 1 leaves"));
  auto s = testing::wait(wb, 0, h.value());
  CHECK(Clock::now() - aborted_at < 1s);
  CHECK(s.code() == StatusCode::kAborted);
  CHECK(s.message() == world_gone.message());
  auto reported = failures.all();
  INFO(Catch::Detail::stringify(reported));
  REQUIRE(reported.size() == 1);  // rank 0's A only: an aborted engine does not report
  CHECK(reported[0].find("rank 0 of 2") != std::string::npos);
  wb.engine(1).abort(common::aborted("done"));  // rank 1's B has nothing to stop collectively with
}

}  // namespace hvd::runtime::engine
