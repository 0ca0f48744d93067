// SetLanes (daemon/rendezvous/set_lanes.h): one Set in flight per lane, the
// next ones wait, within their bounds.
#include "daemon/rendezvous/set_lanes.h"

#include <catch2/catch.hpp>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using hvd::daemon::SetLanes;

TEST_CASE("SetLanes: a lane's next Set waits for the one in flight") {
  SetLanes lanes;
  REQUIRE(lanes.enter(1).is_ok());
  CHECK(lanes.enter(2).is_ok());  // other lanes do not wait
  CHECK(lanes.enter(-1).is_ok());
  auto next = std::async(std::launch::async, [&] { return lanes.enter(1); });
  CHECK(next.wait_for(100ms) == std::future_status::timeout);
  lanes.leave(1);
  REQUIRE(next.wait_for(5s) == std::future_status::ready);
  CHECK(next.get().is_ok());
  lanes.leave(1);
  lanes.leave(1);  // not held: nothing happens
  CHECK(lanes.enter(1).is_ok());
}

TEST_CASE("SetLanes: bounded waits") {
  SECTION("at most max_waiting wait; more are refused at once") {
    SetLanes lanes({.wait = 5s, .lease = 10s, .max_waiting = 1});
    REQUIRE(lanes.enter(3).is_ok());
    auto waiting = std::async(std::launch::async, [&] { return lanes.enter(3); });
    std::this_thread::sleep_for(100ms);
    const auto refused = lanes.enter(3);
    CHECK(refused.code() == hvd::common::StatusCode::kFailedPrecondition);
    CHECK(refused.message() ==
          "the Set calls of slot 3 are one at a time and 1 already wait for the one in flight");
    lanes.leave(3);
    CHECK(waiting.get().is_ok());
  }
  SECTION("a wait ends after `wait`") {
    SetLanes lanes({.wait = 200ms, .lease = 10s, .max_waiting = 4});
    REQUIRE(lanes.enter(-1).is_ok());
    const auto start = std::chrono::steady_clock::now();
    const auto refused = lanes.enter(-1);
    CHECK(std::chrono::steady_clock::now() - start >= 200ms);
    CHECK(refused.message() ==
          "the Set calls of the job are one at a time and the one in flight took longer than 0 s");
  }
  SECTION("a lane held past its lease is taken over") {
    SetLanes lanes({.wait = 5s, .lease = 200ms, .max_waiting = 4});
    REQUIRE(lanes.enter(0).is_ok());  // its Set never reaches its handler
    const auto start = std::chrono::steady_clock::now();
    CHECK(lanes.enter(0).is_ok());
    CHECK(std::chrono::steady_clock::now() - start >= 200ms);
  }
  SECTION("close() wakes the waiters and refuses the next ones") {
    SetLanes lanes;
    REQUIRE(lanes.enter(0).is_ok());
    auto waiting = std::async(std::launch::async, [&] { return lanes.enter(0); });
    std::this_thread::sleep_for(50ms);
    lanes.close();
    CHECK(waiting.get().code() == hvd::common::StatusCode::kUnavailable);
    CHECK(lanes.enter(5).code() == hvd::common::StatusCode::kUnavailable);
  }
}
