// The bookkeeping parts of the job session (launcher/job_session.h):
// AgentStreams, JobExits and FirstRound.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_streams.h"
#include "launcher/first_round.h"
#include "launcher/job_exits.h"

using namespace hvd::launcher;
using namespace std::chrono_literals;

TEST_CASE("agent streams: an agent's latest stream counts, the end of an older one does not") {
  AgentStreams streams;
  streams.start(2);  // stream i is agent i's
  CHECK_FALSE(streams.all_ended());
  CHECK(streams.end(5) == std::nullopt);  // no such stream
  CHECK(streams.end(-1) == std::nullopt);
  CHECK(streams.end(1) == std::optional<size_t>(1));
  CHECK(streams.ended(1));
  CHECK_FALSE(streams.all_ended());

  // Agent 0 gets a job of its own: stream 2; stream 0 ending is old news.
  CHECK(streams.open(0) == 2);
  CHECK(streams.end(0) == std::nullopt);
  CHECK_FALSE(streams.ended(0));

  streams.mark_lost(1);
  CHECK(streams.lost(1));
  CHECK(streams.lost_agents() == std::vector<bool>{false, true});

  // An agent added later (elastic) has no stream until one is opened.
  streams.add_agent();
  CHECK(streams.ended(2));
  CHECK_FALSE(streams.lost(2));
  CHECK(streams.open(2) == 3);
  CHECK_FALSE(streams.ended(2));
  CHECK(streams.end(2) == std::optional<size_t>(0));
  CHECK(streams.end(3) == std::optional<size_t>(2));
  CHECK(streams.all_ended());

  CHECK(why_stream_ended(hvd::common::Status::ok()) ==
        "its event stream ended before the workers exited");
  CHECK(why_stream_ended(hvd::common::unavailable("Socket closed")) == "Socket closed");
}

TEST_CASE("job exits: one exit per slot; the failure that decides is the first specific one") {
  JobExits exits(4, 2);  // slots 0..3, workers in 0 and 1
  CHECK(exits.exited(0));
  CHECK_FALSE(exits.exited(0));   // exited already
  CHECK_FALSE(exits.exited(2));   // no worker
  CHECK_FALSE(exits.exited(-1));  // unknown
  CHECK_FALSE(exits.exited(4));
  CHECK(exits.exited_count() == 1);
  exits.set_running(2);
  CHECK_FALSE(exits.has_exited(2));
  CHECK(exits.exited(2));
  exits.set_gone(1);  // lost with its agent: no exit event, not counted
  CHECK(exits.has_exited(1));
  CHECK(exits.exited_count() == 2);

  const auto now = JobExits::Clock::now();
  CHECK_FALSE(exits.settling());
  CHECK_FALSE(exits.take_failure());
  exits.add_failure(WorkerExited{1, 11, 1, 0}, now);
  exits.add_failure(WorkerExited{0, 10, 1, 0}, now + 10ms);
  exits.add_failure(WorkerExited{3, 13, 0, 9}, now + 20ms);
  CHECK(exits.settling());
  CHECK(exits.settle_deadline() == now + kFailureSettle);
  auto decided = exits.take_failure();
  REQUIRE(decided);
  CHECK(decided->rank == 3);  // killed by a signal, not the generic exit code 1
  CHECK_FALSE(exits.settling());
  CHECK_FALSE(exits.take_failure());

  exits.add_failure(WorkerExited{2, 12, 1, 0}, now);
  exits.add_failure(WorkerExited{0, 10, 1, 0}, now);
  CHECK(exits.take_failure()->rank == 2);  // only generic ones: the first

  CHECK_FALSE(exits.code());
  exits.decide(3);
  exits.decide(0);
  CHECK(exits.code() == 3);
}

TEST_CASE("first round: progress lines, and the ranks that never joined once it is due") {
  const std::vector<RankSlot> plan{{.rank = 0, .size = 3, .host = "h1"},
                                   {.rank = 1, .size = 3, .local_size = 2, .host = "h2"},
                                   {.rank = 2, .size = 3, .local_rank = 1, .local_size = 2,
                                    .host = "h2"}};
  FirstRound round(30s, plan);
  CHECK(round.timeout() == 30s);
  const auto t0 = FirstRound::Clock::now();
  // Nobody joined yet: the clock has not started.
  RoundView view;
  CHECK(round.overdue(view, t0 + 1h, 0ms).empty());
  CHECK_FALSE(round.progress(view, t0 + 1h));

  view.first_join = t0;
  view.missing = {1, 2};
  round.track(view);
  CHECK_FALSE(round.progress(view, t0 + 9s));
  CHECK(round.progress(view, t0 + 10s) ==
        std::optional<std::string>("rendezvous: 1 of 3 ranks joined, waiting for ranks 1, 2 on "
                                   "host h2 (10 of 30 s)"));
  CHECK_FALSE(round.progress(view, t0 + 15s));  // the next one at t0 + 20 s
  // Rank 2 joined, then its own Join timed out (withdrawn): it is not named.
  view.missing = {1};
  round.track(view);
  view.missing = {1, 2};
  CHECK(round.overdue(view, t0 + 28s, 1000ms).empty());
  CHECK(round.overdue(view, t0 + 29s, 1000ms) == std::vector<int>{1});
  CHECK(round.timeout_error({1}) ==
        "rendezvous timed out after 30 s: rank 1 never joined (a worker must call hvd.init())");
  CHECK(round.progress(view, t0 + 31s) ==
        std::optional<std::string>("rendezvous: 1 of 3 ranks joined, waiting for ranks 1, 2 on "
                                   "host h2 (31 of 30 s)"));

  view.complete = true;  // every rank joined
  CHECK(round.overdue(view, t0 + 1h, 0ms).empty());
  CHECK_FALSE(round.progress(view, t0 + 1h));
  view.complete = false;  // a later round: the runtime's to time
  view.round = 1;
  CHECK(round.overdue(view, t0 + 1h, 0ms).empty());
}

TEST_CASE("first round: its timeout grows with the most ranks on one host") {
  std::vector<RankSlot> plan;
  for (int r = 0; r < 1024; ++r) plan.push_back({.rank = r, .size = 1024, .host = "h1"});
  CHECK(FirstRound(30s, plan).timeout() == 132s);  // 30 s + 100 ms x 1024
  for (int r = 0; r < 1024; ++r) plan[static_cast<size_t>(r)].host = "h" + std::to_string(r % 16);
  CHECK(FirstRound(30s, plan).timeout() == 36s);  // 64 a host: 36.4 s
}
