// LivenessRule (launcher/liveness_rule.h): a late heartbeat is a death
// verdict only when the process is stopped for the heartbeat timeout or the
// silence passes the hung limit; a late running process is warned of once
// per episode. The clock is a fake one: time points built by hand.
#include "launcher/liveness_rule.h"

#include <catch2/catch.hpp>

using hvd::launcher::LivenessRule;
using namespace std::chrono_literals;

namespace {

const LivenessRule::Clock::time_point t0{};

LivenessRule rule() { return LivenessRule({5s, 10}); }

} // namespace

TEST_CASE("liveness rule: a late running worker is warned of once, not dead",
          "[liveness]") {
  LivenessRule r = rule();
  auto f = r.review({{1, 6s}}, t0 + 6s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].process == 1);
  CHECK_FALSE(f[0].dead);
  CHECK(f[0].text == "no heartbeat for 6.0 s, but its process runs (starved of "
                     "CPU?); dead only at the hung "
                     "limit of 50 s");
  CHECK(
      r.review({{1, 7s}}, t0 + 7s).empty()); // same episode: no second warning
  CHECK(r.review({{1, 49s}}, t0 + 49s).empty()); // under the hung limit of 50 s
  CHECK(r.review({}, t0 + 50s).empty()); // it beat again: the episode ends
  f = r.review({{1, 6s}}, t0 + 60s);     // a new episode warns again
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].dead);
}

TEST_CASE(
    "liveness rule: a silence past the hung limit is death even if running",
    "[liveness]") {
  LivenessRule r = rule();
  CHECK(r.hung_limit() == 50s);
  r.review({{2, 6s}}, t0 + 6s);
  auto f = r.review({{2, 51s}}, t0 + 51s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].dead);
  CHECK(f[0].text.rfind("no heartbeat for 50 s (the hung limit", 0) == 0);
}

TEST_CASE("liveness rule: a process stopped for the timeout is dead",
          "[liveness]") {
  LivenessRule r = rule();
  r.process_state(3, true, t0 + 1s); // the agent saw it stopped
  auto f = r.review({{3, 5500ms}}, t0 + 5500ms);
  REQUIRE(f.size() == 1); // late, stopped 4.5 s only: a warning
  CHECK_FALSE(f[0].dead);
  CHECK(f[0].text == "no heartbeat for 5.5 s, but its process was stopped only "
                     "just (state T)");
  r.process_state(3, true, t0 + 2s); // later samples keep the first time
  f = r.review({{3, 6s}}, t0 + 6s);
  REQUIRE(f.size() == 1);
  CHECK(f[0].dead);
  CHECK(f[0].text == "no heartbeat for 5 s (its process is stopped, state T)");
}

TEST_CASE("liveness rule: stopped then running again is a late running worker",
          "[liveness]") {
  LivenessRule r = rule();
  r.process_state(4, true, t0);
  r.process_state(4, false, t0 + 3s); // SIGCONT
  auto f = r.review({{4, 8s}}, t0 + 8s);
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].dead);
  r.forget(4);
  f = r.review({{4, 9s}}, t0 + 9s); // forgotten: a new episode
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].dead);
}

TEST_CASE("liveness rule: on time, or timeout 0, says nothing", "[liveness]") {
  LivenessRule r = rule();
  r.process_state(5, true, t0);
  CHECK(r.review({{5, 5s}}, t0 + 100s).empty()); // not past the timeout
  LivenessRule off({0s, 10});
  CHECK(off.review({{5, 1000s}}, t0 + 1000s).empty());
}

TEST_CASE("liveness rule: several late workers are judged each on its own",
          "[liveness]") {
  LivenessRule r = rule();
  r.process_state(1, true, t0);
  auto f = r.review({{0, 6s}, {1, 6s}, {2, 60s}}, t0 + 6s);
  REQUIRE(f.size() == 3);
  CHECK_FALSE(f[0].dead);
  CHECK(f[1].dead);
  CHECK(f[2].dead);
}

TEST_CASE("liveness rule: many warnings of one review make one line",
          "[liveness]") {
  LivenessRule r = rule();
  std::vector<std::pair<std::string, LivenessRule::Finding>> w;
  for (int i = 0; i < 3; ++i) {
    w.emplace_back("rank " + std::to_string(i),
                   LivenessRule::Finding{i, false, 6s, "late"});
  }
  CHECK(
      LivenessRule::warning_lines(w) ==
      std::vector<std::string>{"rank 0: late", "rank 1: late", "rank 2: late"});
  w.emplace_back("rank 3", LivenessRule::Finding{3, false, 6s, "late"});
  CHECK(LivenessRule::warning_lines(w) ==
        std::vector<std::string>{
            "4 late workers (rank 0, rank 1, rank 2, and 1 more), e.g. "
            "rank 0: late"});
}

TEST_CASE("liveness rule: most of the job late at once waits kCrowdMultiple x the hung limit",
          "[liveness]") {
  // 6 of 8 watched workers silent for 60 s: hvdrun's side is starved, not
  // them; a stopped one is still dead, and with few late the limit is 50 s.
  LivenessRule r = rule();
  r.process_state(5, true, t0);
  std::vector<LivenessRule::Late> late;
  for (int p = 0; p < 6; ++p) late.push_back({p, 60s});
  auto f = r.review(late, t0 + 60s, 8);
  REQUIRE(f.size() == 6);
  for (const auto& finding : f) {
    INFO(finding.process);
    CHECK(finding.dead == (finding.process == 5));
  }
  CHECK(f[0].text.find("dead only at the hung limit of 150 s (x 3 while most of the job is late "
                       "at once: hvdrun or its host is starved)") != std::string::npos);
  // Past three hung limits they are dead all the same.
  f = r.review({{0, 151s}, {1, 151s}, {2, 151s}}, t0 + 151s, 4);
  REQUIRE(f.size() == 3);
  CHECK(f[0].dead);
  CHECK(f[0].text.rfind("no heartbeat for 150 s (the hung limit", 0) == 0);
  // Two of eight late: no crowd, the hung limit is 50 s.
  LivenessRule few = rule();
  f = few.review({{0, 60s}, {1, 60s}}, t0 + 60s, 8);
  REQUIRE(f.size() == 2);
  CHECK(f[0].dead);
}

TEST_CASE("liveness rule: many deaths make one message", "[liveness]") {
  std::vector<std::pair<std::string, LivenessRule::Finding>> d;
  for (int i = 0; i < 5; ++i) {
    d.emplace_back("rank " + std::to_string(i), LivenessRule::Finding{i, true, 60s, "silent"});
  }
  CHECK(LivenessRule::death_message(d) ==
        "5 workers stopped responding (rank 0, rank 1, rank 2, and 2 more), e.g. rank 0: silent");
  d.resize(2);
  CHECK(LivenessRule::death_message(d) ==
        "rank 0 stopped responding: silent; rank 1 stopped responding: silent");
}
