#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent/orphan_timer.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::OrphanTimer;
using hvd::daemon::test::eventually;

namespace {

// Records the orphans a timer reports.
struct Orphans {
  OrphanTimer::Callback callback() {
    return [this](const std::string& job, std::chrono::milliseconds unheld_for) {
      std::lock_guard lock(mu);
      jobs.push_back(job);
      waited.push_back(unheld_for);
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu);
    return jobs;
  }
  std::mutex mu;
  std::vector<std::string> jobs;
  std::vector<std::chrono::milliseconds> waited;
};

}  // namespace

TEST_CASE("OrphanTimer reports a job nobody held for the grace, once") {
  Orphans orphans;
  OrphanTimer timer(100ms, orphans.callback());
  const auto start = std::chrono::steady_clock::now();
  timer.track("a");
  timer.release("a");
  REQUIRE(eventually([&] { return !orphans.seen().empty(); }, 3000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 100ms);
  std::this_thread::sleep_for(300ms);
  CHECK(orphans.seen() == std::vector<std::string>{"a"});
  CHECK(orphans.waited[0] >= 100ms);
}

TEST_CASE("OrphanTimer: a job held by its Launch or a Watch is not an orphan") {
  Orphans orphans;
  OrphanTimer timer(100ms, orphans.callback());
  timer.track("launching");  // the Launch holds it
  timer.track("watched");
  timer.hold("watched");     // a Watch began before the Launch returned
  timer.release("watched");  // the Launch returned
  timer.track("rewatched");
  timer.release("rewatched");
  std::this_thread::sleep_for(50ms);
  timer.hold("rewatched");  // a new Watch within the grace
  std::this_thread::sleep_for(400ms);
  CHECK(orphans.seen().empty());

  // Once the last holder is gone, the countdown runs again.
  timer.release("rewatched");
  REQUIRE(eventually([&] { return orphans.seen().size() == 1; }, 3000ms));
  CHECK(orphans.seen()[0] == "rewatched");
}

TEST_CASE("OrphanTimer: two holders, the countdown starts when both are gone") {
  Orphans orphans;
  OrphanTimer timer(100ms, orphans.callback());
  timer.track("j");
  timer.hold("j");
  timer.release("j");  // one holder left
  std::this_thread::sleep_for(300ms);
  CHECK(orphans.seen().empty());
  timer.release("j");
  timer.release("j");  // an extra release changes nothing
  REQUIRE(eventually([&] { return orphans.seen().size() == 1; }, 3000ms));
}

TEST_CASE("OrphanTimer ignores forgotten and unknown jobs") {
  Orphans orphans;
  OrphanTimer timer(50ms, orphans.callback());
  timer.track("done");
  timer.release("done");
  timer.forget("done");
  timer.hold("never-tracked");
  timer.release("never-tracked");
  std::this_thread::sleep_for(300ms);
  CHECK(orphans.seen().empty());
}

TEST_CASE("OrphanTimer reports several due jobs") {
  Orphans orphans;
  OrphanTimer timer(50ms, orphans.callback());
  for (const char* job : {"x", "y", "z"}) {
    timer.track(job);
    timer.release(job);
  }
  REQUIRE(eventually([&] { return orphans.seen().size() == 3; }, 3000ms));
}

TEST_CASE("OrphanTimer with grace 0 never reports; stop() ends reporting") {
  Orphans orphans;
  {
    OrphanTimer never(0ms, orphans.callback());
    never.track("a");
    never.release("a");
    std::this_thread::sleep_for(100ms);
  }
  CHECK(orphans.seen().empty());
  OrphanTimer timer(200ms, orphans.callback());
  timer.track("b");
  timer.release("b");
  timer.stop();
  std::this_thread::sleep_for(400ms);
  CHECK(orphans.seen().empty());
}

TEST_CASE("OrphanTimer: a job's own shorter grace counts once a Watch held it") {
  Orphans orphans;
  OrphanTimer timer(60'000ms, orphans.callback());
  timer.track("short", 200ms);
  timer.track("unwatched", 200ms);  // never watched: the timer's grace
  timer.track("longer", 120'000ms);  // never longer than the timer's grace
  timer.track("none");               // 0: the timer's grace
  for (const char* job : {"short", "longer", "none"}) timer.hold(job);
  for (const char* job : {"short", "unwatched", "longer", "none"}) timer.release(job);
  const auto released = std::chrono::steady_clock::now();
  timer.release("short");  // the Watch ended
  REQUIRE(eventually([&] { return !orphans.seen().empty(); }, 3000ms));
  CHECK(std::chrono::steady_clock::now() - released >= 200ms);
  std::this_thread::sleep_for(500ms);
  CHECK(orphans.seen() == std::vector<std::string>{"short"});
}
