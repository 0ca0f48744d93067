#include "daemon/rendezvous/membership_events.h"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

namespace hvd::daemon {

namespace {

using namespace std::chrono_literals;
using Kind = MembershipChange::Kind;

MembershipChange change(Kind kind, int64_t round, std::string host, int slot) {
  MembershipChange c;
  c.kind = kind;
  c.round = round;
  c.hosts = {std::move(host)};
  c.slots = {slot};
  return c;
}

}  // namespace

TEST_CASE("membership events reach every subscriber in order with sequence numbers",
          "[membership]") {
  MembershipEvents events;
  auto a = events.subscribe();
  auto b = events.subscribe();
  CHECK(events.subscribers() == 2);
  CHECK(events.publish(change(Kind::kAdded, 0, "h2", 3)) == 1);
  CHECK(events.publish(change(Kind::kRemoved, 0, "h1", 1)) == 2);
  for (auto* sub : {a.get(), b.get()}) {
    auto first = sub->next(1s);
    REQUIRE(first);
    CHECK(first->sequence == 1);
    CHECK(first->kind == Kind::kAdded);
    CHECK(first->hosts == std::vector<std::string>{"h2"});
    CHECK(first->slots == std::vector<int>{3});
    auto second = sub->next(1s);
    REQUIRE(second);
    CHECK(second->sequence == 2);
    CHECK(second->kind == Kind::kRemoved);
    CHECK_FALSE(sub->next(10ms));
  }
  b.reset();
  CHECK(events.subscribers() == 1);
}

TEST_CASE("membership events: a subscriber sees only what is published after it subscribed",
          "[membership]") {
  MembershipEvents events;
  events.publish(change(Kind::kAdded, 0, "h", 1));
  auto sub = events.subscribe();
  CHECK_FALSE(sub->next(10ms));
  sub->deliver(change(Kind::kAdded, 0, "h", 1));  // its own snapshot
  events.publish(change(Kind::kAdded, 0, "h", 2));
  auto snapshot = sub->next(1s);
  REQUIRE(snapshot);
  CHECK(snapshot->sequence == 2);
  auto later = sub->next(1s);
  REQUIRE(later);
  CHECK(later->sequence == 3);
  CHECK(later->slots == std::vector<int>{2});
}

TEST_CASE("membership events: next waits for a publication from another thread",
          "[membership]") {
  MembershipEvents events;
  auto sub = events.subscribe();
  auto waiter = std::async(std::launch::async, [&] { return sub->next(5s); });
  std::this_thread::sleep_for(50ms);
  events.publish(change(Kind::kRemoved, 4, "h3", 7));
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  auto got = waiter.get();
  REQUIRE(got);
  CHECK(got->round == 4);
}

TEST_CASE("membership events: a subscriber that falls behind gets its queue coalesced",
          "[membership]") {
  MembershipEvents events;
  auto sub = events.subscribe();
  const int n = static_cast<int>(MembershipEvents::kMaxQueued) + 1;
  for (int i = 0; i < n; ++i) {
    auto c = change(i % 2 == 0 ? Kind::kAdded : Kind::kRemoved, 2, "h" + std::to_string(i % 3), i);
    if (c.kind == Kind::kRemoved) c.member_slots = {i};
    events.publish(std::move(c));
  }
  auto added = sub->next(1s);
  auto removed = sub->next(1s);
  REQUIRE(added);
  REQUIRE(removed);
  CHECK_FALSE(sub->next(10ms));
  CHECK(added->kind == Kind::kAdded);
  CHECK(added->sequence == n);  // the last event (n - 1, even) was an ADDED
  CHECK(added->hosts == std::vector<std::string>{"h0", "h2", "h1"});
  CHECK(added->slots.size() == static_cast<size_t>((n + 1) / 2));
  CHECK(removed->kind == Kind::kRemoved);
  CHECK(removed->slots.size() == static_cast<size_t>(n / 2));
  CHECK(removed->member_slots == removed->slots);
  CHECK(removed->sequence == n - 1);
}

TEST_CASE("membership events: close wakes a waiting subscriber at once, after what is queued",
          "[membership]") {
  MembershipEvents events;
  auto sub = events.subscribe();
  events.publish(change(Kind::kAdded, 0, "h", 1));
  auto idle = events.subscribe();  // nothing queued for it
  auto waiter = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    auto got = idle->next(30s);
    return std::make_pair(got.has_value(), std::chrono::steady_clock::now() - start);
  });
  std::this_thread::sleep_for(50ms);
  events.close();
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  auto [got, waited] = waiter.get();
  CHECK_FALSE(got);
  CHECK(waited < 5s);
  CHECK(idle->closed());
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(idle->next(30s));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  REQUIRE(sub->next(30s));  // queued before the close: still delivered
  CHECK_FALSE(sub->next(30s));
  auto late = events.subscribe();
  CHECK(late->closed());
  CHECK_FALSE(late->next(30s));
}

}  // namespace hvd::daemon
