#include "daemon/rendezvous/elastic_rounds.h"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

namespace hvd::daemon {

namespace {

using namespace std::chrono_literals;
using common::Result;

std::future<Result<JoinResult>> join_async(ElasticRounds& e, int slot, int prev,
                                           const std::string& host,
                                           std::chrono::milliseconds timeout = 5000ms) {
  return std::async(std::launch::async, [&e, slot, prev, host, timeout] {
    return e.join(slot, prev, host, timeout, nullptr);
  });
}

JoinResult world(std::future<Result<JoinResult>>& f) {
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  auto r = f.get();
  REQUIRE(r.is_ok());
  return r.value();
}

// Slots 0..n-1 join round 0 on host "h" (their launch order).
void form_first_round(ElasticRounds& e, int n) {
  std::vector<std::future<Result<JoinResult>>> joins;
  for (int slot = 0; slot < n; ++slot) joins.push_back(join_async(e, slot, slot, "h"));
  for (auto& j : joins) world(j);
}

// Waits until the forming round shows as waiting to `slot`.
bool wait_waiting(const ElasticRounds& e, int slot) {
  for (int i = 0; i < 500 && !e.waiting(slot); ++i) std::this_thread::sleep_for(10ms);
  return e.waiting(slot).has_value();
}

}  // namespace

TEST_CASE("elastic rounds: shrink when a worker is lost, grow when its replacement joins",
          "[elastic]") {
  MembershipEvents events;
  auto watcher = events.subscribe();
  ElasticRounds e(3, 2, &events);
  // Round 0: hvdrun's plan (slots in order), two hosts.
  auto a = join_async(e, 2, 2, "h2");
  auto b = join_async(e, 0, 0, "h1");
  auto c = join_async(e, 1, 1, "h1");
  JoinResult w2 = world(a), w0 = world(b), w1 = world(c);
  CHECK(w0.rank == 0);
  CHECK(w1.rank == 1);
  CHECK(w2.rank == 2);
  CHECK(w0.size == 3);
  CHECK(w0.round == 0);
  CHECK(std::make_pair(w1.local_rank, w1.local_size) == std::make_pair(1, 2));
  CHECK(std::make_pair(w2.local_rank, w2.local_size) == std::make_pair(0, 1));
  CHECK(std::make_pair(w2.cross_rank, w2.cross_size) == std::make_pair(1, 2));

  // Slot 1 dies: the survivors form round 1 without it, keeping their order.
  e.lost(1);
  auto s0 = join_async(e, 0, 0, "h1");
  auto s2 = join_async(e, 2, 2, "h2");
  w0 = world(s0);
  w2 = world(s2);
  CHECK(w0.rank == 0);
  CHECK(w2.rank == 1);
  CHECK(w2.size == 2);
  CHECK(w2.round == 1);
  CHECK_FALSE(e.waiting(0));
  CHECK_FALSE(watcher->next(0ms));  // the members rejoining are no news

  // Its replacement (same slot, new: prev -1) waits; the members are told.
  auto n1 = join_async(e, 1, -1, "h1");
  auto added = watcher->next(5s);
  REQUIRE(added);
  CHECK(added->kind == MembershipChange::Kind::kAdded);
  CHECK(added->round == 1);
  CHECK(added->hosts == std::vector<std::string>{"h1"});
  CHECK(added->slots == std::vector<int>{1});
  REQUIRE(wait_waiting(e, 0));
  auto waiting = e.waiting(2);
  REQUIRE(waiting);
  CHECK(waiting->round == 1);
  CHECK(waiting->slots == std::vector<int>{1});
  CHECK_FALSE(e.waiting(1));  // not a member of round 1
  auto r0 = join_async(e, 0, 0, "h1");
  auto r2 = join_async(e, 2, 1, "h2");
  w0 = world(r0);
  w2 = world(r2);
  JoinResult n = world(n1);
  CHECK(w0.rank == 0);  // the oldest worker stays rank 0
  CHECK(w2.rank == 1);
  CHECK(n.rank == 2);   // the newcomer comes last
  CHECK(n.size == 3);
  CHECK(n.round == 2);
  CHECK_FALSE(e.waiting(0));
  CHECK_FALSE(watcher->next(0ms));
}

TEST_CASE("elastic rounds: below min-np a round waits, and times out naming the missing",
          "[elastic]") {
  ElasticRounds e(2, 2);
  form_first_round(e, 2);
  e.lost(1);
  auto alone = e.join(0, 0, "h", 200ms, nullptr);
  CHECK(alone.status().code() == common::StatusCode::kTimeout);
  CHECK_THAT(alone.status().message(),
             Catch::Contains("fewer than the 2 workers of --min-np joined"));
  // A lost member reported while the others wait lets the round form.
  ElasticRounds f(3, 1);
  auto x = join_async(f, 0, 0, "h");
  auto y = join_async(f, 1, 1, "h");
  auto z = join_async(f, 2, 2, "h");
  world(x);
  world(y);
  world(z);
  auto again = join_async(f, 0, 0, "h");
  auto again2 = join_async(f, 1, 1, "h");
  std::this_thread::sleep_for(50ms);
  CHECK(again.wait_for(0ms) != std::future_status::ready);  // waits for slot 2
  f.lost(2);
  CHECK(world(again).size == 2);
  CHECK(world(again2).size == 2);
}

TEST_CASE("elastic rounds: losing slots says which were members of the round", "[elastic]") {
  ElasticRounds e(2, 1);
  form_first_round(e, 2);
  auto removal = e.lost(std::vector<int>{1, 5});
  CHECK(removal.round == 0);
  CHECK(removal.members == std::vector<int>{1});
  auto s0 = join_async(e, 0, 0, "h");  // the round forms without slot 1
  CHECK(world(s0).size == 1);
}

TEST_CASE("elastic rounds: a worker lost before the first round does not hold it up",
          "[elastic]") {
  // Issue 27 item 1: 4 launched, min 2; the host of slots 2 and 3 is lost
  // while slots 0 and 1 wait in the first Join.
  ElasticRounds e(4, 2);
  auto a = join_async(e, 0, 0, "h1");
  auto b = join_async(e, 1, 1, "h1");
  std::this_thread::sleep_for(50ms);
  CHECK(a.wait_for(0ms) != std::future_status::ready);
  auto forming = e.forming();
  REQUIRE(forming);
  CHECK(forming->round == 0);
  CHECK(forming->joined == std::vector<int>{0, 1});
  CHECK(forming->missing == std::vector<int>{2, 3});
  auto removal = e.lost(std::vector<int>{2, 3});
  CHECK(removal.round == -1);
  CHECK(removal.members == std::vector<int>{2, 3});
  JoinResult w0 = world(a), w1 = world(b);
  CHECK(w0.round == 0);
  CHECK(w0.size == 2);
  CHECK(w1.rank == 1);
  CHECK_FALSE(e.forming());
  // Below --min-np it still waits (and names why at its deadline).
  ElasticRounds f(3, 2);
  auto x = join_async(f, 0, 0, "h", 300ms);
  f.lost(std::vector<int>{1, 2});
  REQUIRE(x.wait_for(5s) == std::future_status::ready);
  auto alone = x.get();
  CHECK(alone.status().code() == common::StatusCode::kTimeout);
  CHECK_THAT(alone.status().message(),
             Catch::Contains("fewer than the 2 workers of --min-np joined"));
  // The first round's deadline names the launched slots that never came.
  ElasticRounds g(3, 1);
  auto late = g.join(0, 0, "h", 100ms, nullptr);
  CHECK_THAT(late.status().message(), Catch::Contains("slots 1, 2 did not join"));
}

TEST_CASE("elastic rounds: forming() reports a round that holds members up, not newcomers",
          "[elastic]") {
  ElasticRounds e(2, 1);
  form_first_round(e, 2);
  CHECK_FALSE(e.forming());
  // A newcomer waits while the round runs: no stall.
  auto n = join_async(e, 2, -1, "h");
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(e.forming());
  // A member left its round to rejoin: the round holds the job up.
  const auto before = std::chrono::steady_clock::now();
  auto m = join_async(e, 0, 0, "h");
  std::optional<ElasticRounds::Forming> forming;
  for (int i = 0; i < 200 && !forming; ++i) {
    std::this_thread::sleep_for(10ms);
    forming = e.forming();
  }
  REQUIRE(forming);
  CHECK(forming->round == 1);
  CHECK(forming->since >= before);
  CHECK(forming->joined == std::vector<int>{0, 2});
  CHECK(forming->missing == std::vector<int>{1});
  e.lost(1);
  CHECK(world(m).size == 2);
  CHECK(world(n).rank == 1);
}

TEST_CASE("elastic rounds: with every member lost the newcomers' round holds the job up",
          "[elastic]") {
  ElasticRounds e(2, 2);
  form_first_round(e, 2);
  e.lost(std::vector<int>{0, 1});  // every worker died at once
  auto n = join_async(e, 5, -1, "h", 300ms);
  std::optional<ElasticRounds::Forming> forming;
  for (int i = 0; i < 200 && !forming; ++i) {
    std::this_thread::sleep_for(5ms);
    forming = e.forming();
  }
  REQUIRE(forming);
  CHECK(forming->round == 1);
  CHECK(forming->joined == std::vector<int>{5});
  CHECK(forming->missing.empty());  // it waits for --min-np workers
  REQUIRE(n.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("elastic rounds: a promoted spare lost before it joined is not waited for",
          "[elastic]") {
  ElasticRounds e(2, 1);
  form_first_round(e, 2);
  e.expect(1, 10s);  // a spare promoted into slot 1 ...
  e.lost(1);         // ... whose predecessor is lost
  auto s0 = join_async(e, 0, 0, "h");
  std::this_thread::sleep_for(50ms);
  CHECK(s0.wait_for(0ms) != std::future_status::ready);  // waits for the spare
  const auto start = std::chrono::steady_clock::now();
  e.lost(1);  // the spare died before its Join
  CHECK(world(s0).size == 1);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

}  // namespace hvd::daemon
