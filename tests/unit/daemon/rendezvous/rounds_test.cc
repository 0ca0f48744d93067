#include "daemon/rendezvous/rounds.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hvd::daemon {

namespace {

using namespace std::chrono_literals;
using common::Result;

// An elastic job: -np `initial`, --min-np `min`, --max-np 16.
Rounds elastic(int initial, int min, MembershipEvents* events = nullptr) {
  return Rounds(Rounds::Rules::elastic(initial, min, 16), events);
}

// The join of the worker of `slot` (its rank in the last round: `prev`) on `host`.
Rounds::Request in(int slot, int prev, const std::string& host) {
  return {{.rank = slot, .host = host}, prev, 1000 + slot};
}

std::future<Result<JoinResult>> join_async(Rounds& e, int slot, int prev,
                                           const std::string& host,
                                           std::chrono::milliseconds timeout = 5000ms) {
  return std::async(std::launch::async, [&e, slot, prev, host, timeout] {
    return e.join(in(slot, prev, host), timeout);
  });
}

JoinResult world(std::future<Result<JoinResult>>& f) {
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  auto r = f.get();
  REQUIRE(r.is_ok());
  return r.value();
}

// Slots 0..n-1 join round 0 on host "h" (their launch order).
void form_first_round(Rounds& e, int n) {
  std::vector<std::future<Result<JoinResult>>> joins;
  for (int slot = 0; slot < n; ++slot) joins.push_back(join_async(e, slot, slot, "h"));
  for (auto& j : joins) world(j);
}

// The round being formed once it holds the job up (up to 2 s).
std::optional<Rounds::Forming> wait_forming(const Rounds& e) {
  std::optional<Rounds::Forming> forming;
  for (int i = 0; i < 200 && !forming; ++i) {
    std::this_thread::sleep_for(10ms);
    forming = e.forming();
  }
  return forming;
}

// Waits until the forming round shows as waiting to `slot`.
bool wait_waiting(const Rounds& e, int slot) {
  for (int i = 0; i < 500 && !e.waiting(slot); ++i) std::this_thread::sleep_for(10ms);
  return e.waiting(slot).has_value();
}

}  // namespace

TEST_CASE("rounds, elastic: shrink when a worker is lost, grow when its replacement joins",
          "[elastic]") {
  MembershipEvents events;
  auto watcher = events.subscribe();
  Rounds e = elastic(3, 2, &events);
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

TEST_CASE("rounds, elastic: below min-np a round waits, and times out naming the missing",
          "[elastic]") {
  Rounds e = elastic(2, 2);
  form_first_round(e, 2);
  e.lost(1);
  auto alone = e.join(in(0, 0, "h"), 200ms);
  CHECK(alone.status().code() == common::StatusCode::kTimeout);
  CHECK_THAT(alone.status().message(),
             Catch::Contains("fewer than the 2 workers of --min-np joined"));
  // A lost member reported while the others wait lets the round form.
  Rounds f = elastic(3, 1);
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

TEST_CASE("rounds, elastic: losing slots says which were members of the round", "[elastic]") {
  Rounds e = elastic(2, 1);
  form_first_round(e, 2);
  auto removal = e.lost(std::vector<int>{1, 5});
  CHECK(removal.round == 0);
  CHECK(removal.members == std::vector<int>{1});
  auto s0 = join_async(e, 0, 0, "h");  // the round forms without slot 1
  CHECK(world(s0).size == 1);
}

TEST_CASE("rounds, elastic: a worker lost before the first round does not hold it up",
          "[elastic]") {
  // Issue 27 item 1: 4 launched, min 2; the host of slots 2 and 3 is lost
  // while slots 0 and 1 wait in the first Join.
  Rounds e = elastic(4, 2);
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
  Rounds f = elastic(3, 2);
  auto x = join_async(f, 0, 0, "h", 300ms);
  f.lost(std::vector<int>{1, 2});
  REQUIRE(x.wait_for(5s) == std::future_status::ready);
  auto alone = x.get();
  CHECK(alone.status().code() == common::StatusCode::kTimeout);
  CHECK_THAT(alone.status().message(),
             Catch::Contains("fewer than the 2 workers of --min-np joined"));
  // The first round's deadline names the launched slots that never came.
  Rounds g = elastic(3, 1);
  auto late = g.join(in(0, 0, "h"), 100ms);
  CHECK_THAT(late.status().message(), Catch::Contains("slots 1, 2 did not join"));
}

TEST_CASE("rounds, elastic: forming() reports a round that holds members up, not newcomers",
          "[elastic]") {
  Rounds e = elastic(2, 1);
  form_first_round(e, 2);
  CHECK_FALSE(e.forming());
  // A newcomer waits while the round runs: no stall.
  auto n = join_async(e, 2, -1, "h");
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(e.forming());
  // A member left its round to rejoin: the round holds the job up.
  const auto before = std::chrono::steady_clock::now();
  auto m = join_async(e, 0, 0, "h");
  std::optional<Rounds::Forming> forming = wait_forming(e);
  REQUIRE(forming);
  CHECK(forming->round == 1);
  CHECK(forming->since >= before);
  CHECK(forming->joined == std::vector<int>{0, 2});
  CHECK(forming->missing == std::vector<int>{1});
  e.lost(1);
  CHECK(world(m).size == 2);
  CHECK(world(n).rank == 1);
}

TEST_CASE("rounds, elastic: with every member lost the newcomers' round holds the job up",
          "[elastic]") {
  Rounds e = elastic(2, 2);
  form_first_round(e, 2);
  e.lost(std::vector<int>{0, 1});  // every worker died at once
  auto n = join_async(e, 5, -1, "h", 300ms);
  std::optional<Rounds::Forming> forming = wait_forming(e);
  REQUIRE(forming);
  CHECK(forming->round == 1);
  CHECK(forming->joined == std::vector<int>{5});
  CHECK(forming->missing.empty());  // it waits for --min-np workers
  REQUIRE(n.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("rounds, elastic: a promoted spare lost before it joined is not waited for",
          "[elastic]") {
  Rounds e = elastic(2, 1);
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

// The fixed-size rounds of a static job (-np `size`), as Membership's
// barrier behaved (these cases were membership_test.cc's).
namespace {

// A static job of `size` ranks.
Rounds fixed(int size, MembershipEvents* events = nullptr) {
  return Rounds(Rounds::Rules::fixed_size(size), events);
}

// A worker asking for `rank` of `size` from `host` (local rank 0 of 1).
common::Placement at(int rank, int size, std::string host) {
  return {.rank = rank, .size = size, .host = std::move(host)};
}

std::future<Result<JoinResult>> join_async(Rounds& m, int rank, int size,
                                           std::chrono::milliseconds timeout = 5000ms) {
  return std::async(std::launch::async, [&m, rank, size, timeout] {
    return m.join({at(rank, size, "host"), -1, 1000 + rank}, timeout);
  });
}

// Waits until exactly `count` ranks are missing.
bool wait_missing(const Rounds& m, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (m.missing().size() != count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool ready(std::future<Result<JoinResult>>& f, std::chrono::milliseconds timeout = 5000ms) {
  return f.wait_for(timeout) == std::future_status::ready;
}

}  // namespace

TEST_CASE("rounds, fixed size: 4 joining threads all get round 0 and their ranks") {
  Rounds m = fixed(4);
  CHECK_FALSE(m.first_join_time().has_value());
  std::vector<std::future<Result<JoinResult>>> joins;
  for (int r = 3; r >= 0; --r) joins.push_back(join_async(m, r, 4));
  for (size_t i = 0; i < joins.size(); ++i) {
    REQUIRE(ready(joins[i]));
    auto res = joins[i].get();
    REQUIRE(res.is_ok());
    CHECK(res->rank == 3 - static_cast<int>(i));
    CHECK(res->size == 4);
    CHECK(res->round == 0);
    CHECK(res->host == "host");
  }
  // Round 0 formed; nobody waits; the next round would wait for every rank.
  CHECK(m.round() == 0);
  CHECK_FALSE(m.forming());
  CHECK(m.missing() == std::vector<int>{0, 1, 2, 3});
  CHECK(m.first_join_time().has_value());
}

TEST_CASE("rounds, fixed size: the round computes Horovod's cross ranks from the local ranks") {
  // Uneven hosts: ranks 0 1 2 on host A, 3 4 on host B, 5 on host C.
  const std::vector<std::pair<int, int>> local{{0, 3}, {1, 3}, {2, 3}, {0, 2}, {1, 2}, {0, 1}};
  std::vector<hvd::common::Placement> placed;
  for (auto [local_rank, local_size] : local) {
    placed.push_back(at(static_cast<int>(placed.size()), 6, "host"));
    placed.back().local_rank = local_rank;
    placed.back().local_size = local_size;
  }
  Rounds m = fixed(6);
  std::vector<std::future<Result<JoinResult>>> joins;
  for (int r = 0; r < 6; ++r) {
    joins.push_back(std::async(std::launch::async, [&m, &placed, r] {
      return m.join({placed[static_cast<size_t>(r)], -1, 1000 + r}, 5000ms);
    }));
  }
  const std::vector<std::pair<int, int>> cross{{0, 3}, {0, 2}, {0, 1}, {1, 3}, {1, 2}, {2, 3}};
  for (int r = 0; r < 6; ++r) {
    REQUIRE(ready(joins[static_cast<size_t>(r)]));
    auto res = joins[static_cast<size_t>(r)].get();
    REQUIRE(res.is_ok());
    CHECK(res->local_rank == placed[static_cast<size_t>(r)].local_rank);
    CHECK(res->local_size == placed[static_cast<size_t>(r)].local_size);
    CHECK(std::make_pair(res->cross_rank, res->cross_size) == cross[static_cast<size_t>(r)]);
  }
  auto bad =
      m.join({{.rank = 0, .size = 6, .local_rank = 2, .local_size = 2, .host = "host"}, -1, 1},
             10ms);
  CHECK(bad.status().code() == common::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "local rank 2 of local size 2 is not a placement");
}

TEST_CASE("rounds, fixed size: rank -1 gets the lowest rank not yet joined") {
  Rounds m = fixed(3);
  auto a = join_async(m, 1, 3);
  auto b = join_async(m, -1, 3);
  // Both are counted before the third join comes.
  REQUIRE(wait_missing(m, 1));
  REQUIRE(m.missing() == std::vector<int>{2});
  auto c = join_async(m, -1, 3);
  REQUIRE(ready(a));
  REQUIRE(ready(b));
  REQUIRE(ready(c));
  CHECK(a.get()->rank == 1);
  CHECK(b.get()->rank == 0);
  CHECK(c.get()->rank == 2);
}

TEST_CASE("rounds, fixed size: a timeout names the missing ranks and withdraws the join") {
  Rounds m = fixed(4);
  auto r0 = join_async(m, 0, 4, 10000ms);
  auto r2 = join_async(m, 2, 4, 10000ms);
  REQUIRE(wait_missing(m, 2));
  const auto start = std::chrono::steady_clock::now();
  auto timed_out = m.join({at(-1, 4, "host"), -1, 7}, 300ms);  // takes rank 1
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(timed_out.is_ok());
  CHECK(timed_out.status().code() == common::StatusCode::kTimeout);
  // Rank 1 itself had joined; it is withdrawn afterwards.
  CHECK(timed_out.status().message() == "timed out after 300 ms: rank 3 of 4 has not joined");
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 2000ms);
  CHECK(m.missing() == std::vector<int>{1, 3});

  auto r1 = join_async(m, 1, 4);
  auto r3 = join_async(m, 3, 4);
  for (auto* f : {&r0, &r1, &r2, &r3}) {
    REQUIRE(ready(*f));
    CHECK(f->get().is_ok());
  }
}

TEST_CASE("rounds, fixed size: the timeout message for ranks 1 and 3 of 4") {
  Rounds m = fixed(4);
  auto r2 = join_async(m, 2, 4, 2300ms);  // times out after rank 0
  REQUIRE(wait_missing(m, 3));
  auto r0 = join_async(m, 0, 4, 2000ms);
  REQUIRE(ready(r0, 5000ms));
  REQUIRE(ready(r2, 5000ms));
  auto res = r0.get();
  REQUIRE_FALSE(res.is_ok());
  CHECK(res.status().message() == "timed out after 2000 ms: ranks 1, 3 of 4 have not joined");
  CHECK(r2.get().status().code() == common::StatusCode::kTimeout);
}

TEST_CASE("rounds, fixed size: a duplicate join in an incomplete round is kAlreadyExists") {
  Rounds m = fixed(2);
  auto first = join_async(m, 0, 2, 5000ms);
  REQUIRE(wait_missing(m, 1));
  auto dup = m.join({at(0, 2, "other"), -1, 9}, 100ms);
  REQUIRE_FALSE(dup.is_ok());
  CHECK(dup.status().code() == common::StatusCode::kAlreadyExists);
  CHECK(dup.status().message().find("rank 0 already joined round 0") != std::string::npos);
  REQUIRE(m.join({at(1, 2, "host"), -1, 2}, 5000ms).is_ok());
  REQUIRE(ready(first));
  CHECK(first.get().is_ok());
}

TEST_CASE("rounds, fixed size: rank out of range and size mismatch are kInvalidArgument") {
  Rounds m = fixed(4);
  auto high = m.join({at(4, 4, "h"), -1, 1}, 10ms);
  CHECK(high.status().code() == common::StatusCode::kInvalidArgument);
  CHECK(high.status().message() == "rank 4 is out of range for size 4");
  auto low = m.join({at(-2, 4, "h"), -1, 1}, 10ms);
  CHECK(low.status().code() == common::StatusCode::kInvalidArgument);
  auto size = m.join({at(0, 3, "h"), -1, 1}, 10ms);
  CHECK(size.status().code() == common::StatusCode::kInvalidArgument);
  CHECK(size.status().message() == "size 3 differs from the job's size 4");
  CHECK(m.missing() == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(m.first_join_time().has_value());
}

TEST_CASE("rounds, fixed size: a second round of joins opens round 1") {
  Rounds m = fixed(2);
  for (int round = 0; round < 2; ++round) {
    auto a = join_async(m, 0, 2);
    auto b = join_async(m, 1, 2);
    REQUIRE(ready(a));
    REQUIRE(ready(b));
    auto ra = a.get();
    auto rb = b.get();
    REQUIRE(ra.is_ok());
    REQUIRE(rb.is_ok());
    CHECK(ra->round == round);
    CHECK(rb->round == round);
    CHECK(m.round() == round);
    CHECK_FALSE(m.forming());
  }
  // Half of a third round: round 2 is open (it holds the job up) but has
  // not formed; round 1 is the last formed.
  auto a = join_async(m, 1, 2, 5000ms);
  REQUIRE(wait_missing(m, 1));
  auto forming = m.forming();
  REQUIRE(forming);
  CHECK(forming->round == 2);
  CHECK(forming->joined == std::vector<int>{1});
  CHECK(forming->missing == std::vector<int>{0});
  CHECK(m.round() == 1);
  CHECK(m.missing() == std::vector<int>{0});
  m.close();
  REQUIRE(ready(a));
}

TEST_CASE("rounds, fixed size: close wakes waiting joins with kCancelled") {
  Rounds m = fixed(3);
  auto a = join_async(m, 0, 3, 10000ms);
  auto b = join_async(m, 1, 3, 10000ms);
  std::this_thread::sleep_for(50ms);
  m.close();
  REQUIRE(ready(a, 2000ms));
  REQUIRE(ready(b, 2000ms));
  CHECK(a.get().status().code() == common::StatusCode::kCancelled);
  CHECK(b.get().status().code() == common::StatusCode::kCancelled);
  CHECK(m.join({at(2, 3, "h"), -1, 1}, 10ms).status().code() == common::StatusCode::kCancelled);
}

TEST_CASE("rounds, fixed size: a join whose caller went away is withdrawn") {
  Rounds m = fixed(2);
  std::atomic<bool> gone{false};
  auto a = std::async(std::launch::async, [&] {
    return m.join({at(0, 2, "h"), -1, 1}, 10000ms, [&] { return gone.load(); });
  });
  REQUIRE(wait_missing(m, 1));
  gone = true;
  REQUIRE(ready(a, 2000ms));
  CHECK(a.get().status().code() == common::StatusCode::kCancelled);
  CHECK(m.missing() == std::vector<int>{0, 1});
}

TEST_CASE("rounds, fixed size: first_join_time is set by the first join and kept") {
  Rounds m = fixed(2);
  const auto before = std::chrono::steady_clock::now();
  auto t = m.join({at(0, 2, "h"), -1, 1}, 20ms);  // times out
  CHECK(t.status().code() == common::StatusCode::kTimeout);
  auto first = m.first_join_time();
  REQUIRE(first.has_value());
  CHECK(*first >= before);
  CHECK(m.missing() == std::vector<int>{0, 1});
}

TEST_CASE("rounds, fixed size: a rank keeps its slot's rank in every round, and is no newcomer") {
  // A static worker that rejoins (shutdown() then init()) with prev rank -1
  // (rank -1 asked, say) is still its slot's rank: no ADDED event, the
  // ranks of every round are the slots.
  MembershipEvents events;
  auto watcher = events.subscribe();
  Rounds m = fixed(3, &events);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<Result<JoinResult>>> joins;
    for (int r = 2; r >= 0; --r) {
      joins.push_back(std::async(std::launch::async, [&m, r] {
        return m.join({at(r, 3, "h" + std::to_string(r % 2)), -1, 1000 + r}, 5000ms);
      }));
    }
    for (size_t i = 0; i < joins.size(); ++i) {
      REQUIRE(ready(joins[i]));
      auto res = joins[i].get();
      REQUIRE(res.is_ok());
      CHECK(res->rank == 2 - static_cast<int>(i));
      CHECK(res->round == round);
      // Its reported local rank (0 of 1), not one counted by host.
      CHECK(std::make_pair(res->local_rank, res->local_size) == std::make_pair(0, 1));
    }
  }
  CHECK_FALSE(watcher->next(0ms));
  CHECK(m.rules().slots == 3);
  CHECK(m.rules().min_size == 3);
  CHECK(m.rules().fixed);
}

}  // namespace hvd::daemon
