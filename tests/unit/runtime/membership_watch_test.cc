// MembershipWatch against the real Rendezvous service of an elastic job,
// served in-process: updates recorded from the stream (and from the
// service's word at subscription), the members-removed callback, a prompt
// stop.
#include "daemon/rendezvous/membership_watch.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous_job.h"
#include "daemon/rendezvous/rendezvous_client.h"

namespace hvd::runtime {

using namespace std::chrono_literals;
using testing::Job;
using testing::kToken;

namespace {

// Polls the watch's updates until `want` bits have arrived (or 5 s pass).
int wait_updates(MembershipWatch& watch, int want) {
  int got = 0;
  for (int i = 0; i < 500 && (got & want) != want; ++i) {
    got |= watch.take_updates();
    if ((got & want) != want) std::this_thread::sleep_for(10ms);
  }
  return got;
}

struct Removals {
  std::mutex mu;
  std::vector<common::Status> seen;
  std::vector<std::vector<int>> ranks;  // the members' ranks in the round, per call
  MembershipWatch::OnMembersRemoved callback() {
    return [this](const common::Status& s, const std::vector<int>& r) {
      std::lock_guard lock(mu);
      seen.push_back(s);
      ranks.push_back(r);
    };
  }
  std::vector<common::Status> get() {
    std::lock_guard lock(mu);
    return seen;
  }
  std::vector<std::vector<int>> get_ranks() {
    std::lock_guard lock(mu);
    return ranks;
  }
};

// Waits until the service has `n` watchers (a watch subscribes on its thread).
void wait_watchers(const Job& job, size_t n) {
  for (int i = 0; i < 500 && job.service.watchers() != n; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(job.service.watchers() == n);
}

// Round 0 of a two-slot elastic job (at least one worker per round).
void form_round_zero(RendezvousClient& client) {
  auto a = std::async(std::launch::async,
                      [&] { return client.join({.rank = 0, .size = 2, .host = "h0"}, 1, 5s, 0); });
  auto b = std::async(std::launch::async,
                      [&] { return client.join({.rank = 1, .size = 2, .host = "h1"}, 2, 5s, 1); });
  REQUIRE(a.get().is_ok());
  REQUIRE(b.get().is_ok());
}

}  // namespace

TEST_CASE("membership watch: a newcomer waiting, hosts added and members removed",
          "[membership]") {
  Job job(2, 1);
  RendezvousClient client(job.server->address(), kToken, 5s);
  form_round_zero(client);
  Removals removals;
  MembershipWatch watch(client, 0, 0, removals.callback());
  wait_watchers(job, 1);

  // The launcher found a new host.
  job.service.hosts_changed({"h2"}, {}, {});
  CHECK(wait_updates(watch, MembershipWatch::kAdded) == MembershipWatch::kAdded);
  CHECK(watch.take_updates() == 0);  // read once

  // Slot 1's worker died; its replacement waits for the next round.
  job.service.lost(1);
  auto newcomer = std::async(std::launch::async, [&] {
    return client.join({.rank = 1, .size = 2, .host = "h1"}, 3, 10s, -1);
  });
  CHECK(wait_updates(watch, MembershipWatch::kAdded) == MembershipWatch::kAdded);

  // A watch opened now is told at once that a worker waits, and that slot
  // 1 of its round was lost before it watched (issue 27: its collectives
  // cannot complete).
  Removals late_removals;
  MembershipWatch late(client, 0, 0, late_removals.callback());
  CHECK(wait_updates(late, MembershipWatch::kAdded | MembershipWatch::kRemoved) ==
        (MembershipWatch::kAdded | MembershipWatch::kRemoved));
  late.stop();
  REQUIRE(late_removals.get().size() == 1);
  CHECK(late_removals.get()[0].message() == "slot(s) 1 of rendezvous round 0 left the job");
  CHECK(late_removals.get_ranks()[0] == std::vector<int>{1});  // its rank in round 0
  CHECK(removals.get().empty());

  // Host h0 is lost: slot 0, a member of round 0, is removed.
  job.service.hosts_changed({}, {"h0"}, {0});
  CHECK(wait_updates(watch, MembershipWatch::kRemoved) == MembershipWatch::kRemoved);
  auto seen = removals.get();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].code() == common::StatusCode::kAborted);
  CHECK(seen[0].message() == "slot(s) 0 of rendezvous round 0 left the job (host(s) h0)");
  CHECK(removals.get_ranks()[0] == std::vector<int>{0});
  // ... and the round no longer waits for it: the newcomer's round forms.
  REQUIRE(newcomer.wait_for(10s) == std::future_status::ready);
  auto world = newcomer.get();
  REQUIRE(world.is_ok());
  CHECK(world->size == 1);
  CHECK(world->round == 1);

  const auto start = std::chrono::steady_clock::now();
  watch.stop();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("membership watch: events of an earlier round and removals of non-members abort nothing",
          "[membership]") {
  Job job(2, 1);
  RendezvousClient client(job.server->address(), kToken, 5s);
  form_round_zero(client);
  Removals removals;
  MembershipWatch watch(client, 0, 1, removals.callback());  // as if in round 1 already
  wait_watchers(job, 1);
  job.service.hosts_changed({}, {"h1"}, {1});                // round 0's slot 1
  // A member of round 0 that watches from now on is told of slot 1 at once
  // (once), but not of slot 7, no member.
  Removals member_removals;
  MembershipWatch member(client, 0, 0, member_removals.callback());
  wait_watchers(job, 2);
  CHECK(wait_updates(member, MembershipWatch::kRemoved) == MembershipWatch::kRemoved);
  job.service.hosts_changed({}, {"h9"}, {7});  // no member of round 0
  CHECK(wait_updates(member, MembershipWatch::kRemoved) == MembershipWatch::kRemoved);
  std::this_thread::sleep_for(100ms);
  CHECK(watch.take_updates() == 0);
  CHECK(removals.get().empty());
  CHECK(member_removals.get().size() == 1);
}

TEST_CASE("membership watch: stop is prompt while the service is unreachable", "[membership]") {
  RendezvousClient client("127.0.0.1:1", kToken, 300ms);
  MembershipWatch watch(client, 0, 0, [](const common::Status&, const std::vector<int>&) {});
  std::this_thread::sleep_for(300ms);  // a failed attempt or two, pausing between them
  const auto start = std::chrono::steady_clock::now();
  watch.stop();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(watch.take_updates() == 0);
}

}  // namespace hvd::runtime
