#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/rendezvous/membership.h"

using namespace std::chrono_literals;
using hvd::common::StatusCode;
using hvd::daemon::JoinResult;
using hvd::daemon::Membership;
using hvd::daemon::Result;

namespace {

// A worker asking for `rank` of `size` from `host` (local rank 0 of 1).
hvd::common::Placement at(int rank, int size, std::string host) {
  return {.rank = rank, .size = size, .host = std::move(host)};
}

std::future<Result<JoinResult>> join_async(Membership& m, int rank, int size,
                                           std::chrono::milliseconds timeout = 5000ms) {
  return std::async(std::launch::async, [&m, rank, size, timeout] {
    return m.join(at(rank, size, "host"), 1000 + rank, timeout);
  });
}

// Waits until exactly `count` ranks are missing.
bool wait_missing(const Membership& m, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (m.missing_ranks().size() != count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool ready(std::future<Result<JoinResult>>& f, std::chrono::milliseconds timeout = 5000ms) {
  return f.wait_for(timeout) == std::future_status::ready;
}

}  // namespace

TEST_CASE("Membership: 4 joining threads all get round 0 and their ranks") {
  Membership m(4);
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
  CHECK(m.complete());
  CHECK(m.missing_ranks().empty());
  CHECK(m.first_join_time().has_value());
}

TEST_CASE("Membership: the round computes Horovod's cross ranks from the local ranks") {
  // Uneven hosts: ranks 0 1 2 on host A, 3 4 on host B, 5 on host C.
  const std::vector<std::pair<int, int>> local{{0, 3}, {1, 3}, {2, 3}, {0, 2}, {1, 2}, {0, 1}};
  std::vector<hvd::common::Placement> placed;
  for (auto [local_rank, local_size] : local) {
    placed.push_back(at(static_cast<int>(placed.size()), 6, "host"));
    placed.back().local_rank = local_rank;
    placed.back().local_size = local_size;
  }
  Membership m(6);
  std::vector<std::future<Result<JoinResult>>> joins;
  for (int r = 0; r < 6; ++r) {
    joins.push_back(std::async(std::launch::async, [&m, &placed, r] {
      return m.join(placed[static_cast<size_t>(r)], 1000 + r, 5000ms);
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
  auto bad = m.join({.rank = 0, .size = 6, .local_rank = 2, .local_size = 2, .host = "host"}, 1,
                    10ms);
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "local rank 2 of local size 2 is not a placement");
}

TEST_CASE("Membership: rank -1 gets the lowest rank not yet joined") {
  Membership m(3);
  auto a = join_async(m, 1, 3);
  auto b = join_async(m, -1, 3);
  // Both are counted before the third join comes.
  REQUIRE(wait_missing(m, 1));
  REQUIRE(m.missing_ranks() == std::vector<int>{2});
  auto c = join_async(m, -1, 3);
  REQUIRE(ready(a));
  REQUIRE(ready(b));
  REQUIRE(ready(c));
  CHECK(a.get()->rank == 1);
  CHECK(b.get()->rank == 0);
  CHECK(c.get()->rank == 2);
}

TEST_CASE("Membership: a timeout names the missing ranks and withdraws the join") {
  Membership m(4);
  auto r0 = join_async(m, 0, 4, 10000ms);
  auto r2 = join_async(m, 2, 4, 10000ms);
  REQUIRE(wait_missing(m, 2));
  const auto start = std::chrono::steady_clock::now();
  auto timed_out = m.join(at(-1, 4, "host"), 7, 300ms);  // takes rank 1
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(timed_out.is_ok());
  CHECK(timed_out.status().code() == StatusCode::kTimeout);
  // Rank 1 itself had joined; it is withdrawn afterwards.
  CHECK(timed_out.status().message() == "timed out after 300 ms: rank 3 of 4 has not joined");
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 2000ms);
  CHECK(m.missing_ranks() == std::vector<int>{1, 3});

  auto r1 = join_async(m, 1, 4);
  auto r3 = join_async(m, 3, 4);
  for (auto* f : {&r0, &r1, &r2, &r3}) {
    REQUIRE(ready(*f));
    CHECK(f->get().is_ok());
  }
}

TEST_CASE("Membership: the timeout message for ranks 1 and 3 of 4") {
  Membership m(4);
  auto r2 = join_async(m, 2, 4, 2300ms);  // times out after rank 0
  REQUIRE(wait_missing(m, 3));
  auto r0 = join_async(m, 0, 4, 2000ms);
  REQUIRE(ready(r0, 5000ms));
  REQUIRE(ready(r2, 5000ms));
  auto res = r0.get();
  REQUIRE_FALSE(res.is_ok());
  CHECK(res.status().message() == "timed out after 2000 ms: ranks 1, 3 of 4 have not joined");
  CHECK(r2.get().status().code() == StatusCode::kTimeout);
}

TEST_CASE("Membership: a duplicate join in an incomplete round is kAlreadyExists") {
  Membership m(2);
  auto first = join_async(m, 0, 2, 5000ms);
  REQUIRE(wait_missing(m, 1));
  auto dup = m.join(at(0, 2, "other"), 9, 100ms);
  REQUIRE_FALSE(dup.is_ok());
  CHECK(dup.status().code() == StatusCode::kAlreadyExists);
  CHECK(dup.status().message().find("rank 0 already joined round 0") != std::string::npos);
  REQUIRE(m.join(at(1, 2, "host"), 2, 5000ms).is_ok());
  REQUIRE(ready(first));
  CHECK(first.get().is_ok());
}

TEST_CASE("Membership: rank out of range and size mismatch are kInvalidArgument") {
  Membership m(4);
  auto high = m.join(at(4, 4, "h"), 1, 10ms);
  CHECK(high.status().code() == StatusCode::kInvalidArgument);
  CHECK(high.status().message() == "rank 4 is out of range for size 4");
  auto low = m.join(at(-2, 4, "h"), 1, 10ms);
  CHECK(low.status().code() == StatusCode::kInvalidArgument);
  auto size = m.join(at(0, 3, "h"), 1, 10ms);
  CHECK(size.status().code() == StatusCode::kInvalidArgument);
  CHECK(size.status().message() == "size 3 differs from the job's size 4");
  CHECK(m.missing_ranks() == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(m.first_join_time().has_value());
}

TEST_CASE("Membership: a second round of joins opens round 1") {
  Membership m(2);
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
    CHECK(m.complete());
  }
  // Half of a third round: the round is open but not complete.
  auto a = join_async(m, 1, 2, 5000ms);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (m.round() != 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(m.round() == 2);
  CHECK_FALSE(m.complete());
  CHECK(m.missing_ranks() == std::vector<int>{0});
  m.close();
  REQUIRE(ready(a));
}

TEST_CASE("Membership: close wakes waiting joins with kCancelled") {
  Membership m(3);
  auto a = join_async(m, 0, 3, 10000ms);
  auto b = join_async(m, 1, 3, 10000ms);
  std::this_thread::sleep_for(50ms);
  m.close();
  REQUIRE(ready(a, 2000ms));
  REQUIRE(ready(b, 2000ms));
  CHECK(a.get().status().code() == StatusCode::kCancelled);
  CHECK(b.get().status().code() == StatusCode::kCancelled);
  CHECK(m.join(at(2, 3, "h"), 1, 10ms).status().code() == StatusCode::kCancelled);
}

TEST_CASE("Membership: a join whose caller went away is withdrawn") {
  Membership m(2);
  std::atomic<bool> gone{false};
  auto a = std::async(std::launch::async, [&] {
    return m.join(at(0, 2, "h"), 1, 10000ms, [&] { return gone.load(); });
  });
  REQUIRE(wait_missing(m, 1));
  gone = true;
  REQUIRE(ready(a, 2000ms));
  CHECK(a.get().status().code() == StatusCode::kCancelled);
  CHECK(m.missing_ranks() == std::vector<int>{0, 1});
}

TEST_CASE("Membership: first_join_time is set by the first join and kept") {
  Membership m(2);
  const auto before = std::chrono::steady_clock::now();
  auto t = m.join(at(0, 2, "h"), 1, 20ms);  // times out
  CHECK(t.status().code() == StatusCode::kTimeout);
  auto first = m.first_join_time();
  REQUIRE(first.has_value());
  CHECK(*first >= before);
  CHECK(m.missing_ranks() == std::vector<int>{0, 1});
}
