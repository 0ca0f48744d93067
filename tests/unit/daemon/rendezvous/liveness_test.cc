#include "daemon/rendezvous/liveness.h"

#include <catch2/catch.hpp>

namespace hvd::daemon {

namespace {
using namespace std::chrono_literals;
using Clock = Liveness::Clock;
}  // namespace

TEST_CASE("liveness: a rank is watched from its join until it leaves", "[liveness]") {
  Liveness l(3);
  const Clock::time_point t0{};
  CHECK(l.silent(1s, t0 + 1h).empty());  // nobody joined: nobody watched
  l.joined(0, t0);
  l.joined(1, t0);
  CHECK(l.silent(5s, t0 + 5s).empty());  // exactly the timeout: still alive
  CHECK(l.silent(5s, t0 + 6s) == std::vector<int>{0, 1});
  l.beat(1, t0 + 4s);
  CHECK(l.silent(5s, t0 + 6s) == std::vector<int>{0});
  CHECK(l.quiet_for(1, t0 + 6s) == std::optional<Clock::duration>(2s));
  l.left(0);
  CHECK(l.silent(5s, t0 + 1h) == std::vector<int>{1});
  CHECK_FALSE(l.quiet_for(0, t0 + 1h).has_value());
  l.beat(0, t0 + 2h);  // a late beat of a rank that left does not watch it again
  CHECK(l.silent(5s, t0 + 3h) == std::vector<int>{1});
  l.joined(0, t0 + 3h);  // init again
  CHECK(l.silent(5s, t0 + 3h + 1s) == std::vector<int>{1});
}

TEST_CASE("liveness: out-of-range ranks and old beats are ignored", "[liveness]") {
  Liveness l(2);
  const Clock::time_point t0{};
  l.joined(-1, t0);
  l.joined(Liveness::kMaxRanks, t0);
  l.beat(7, t0);
  l.left(9);
  CHECK(l.silent(1s, t0 + 1h).empty());
  l.joined(0, t0 + 10s);
  l.beat(0, t0 + 5s);  // older than what is known: no going back
  CHECK(l.quiet_for(0, t0 + 12s) == std::optional<Clock::duration>(2s));
}

TEST_CASE("liveness: a watch begins at the join; beats do not move it", "[liveness]") {
  Liveness l(2);
  const Clock::time_point t0{};
  CHECK_FALSE(l.watched_since(0).has_value());
  l.joined(0, t0 + 1s);
  l.beat(0, t0 + 5s);
  CHECK(l.watched_since(0) == std::optional<Clock::time_point>(t0 + 1s));
  l.left(0);
  CHECK_FALSE(l.watched_since(0).has_value());
  l.joined(0, t0 + 9s);  // the slot's next worker
  CHECK(l.watched_since(0) == std::optional<Clock::time_point>(t0 + 9s));
  l.joined(5, t0 + 2s);  // an elastic slot past the first size
  CHECK(l.watched_since(5) == std::optional<Clock::time_point>(t0 + 2s));
}

TEST_CASE("liveness: a rank has arrived from its Join until it leaves", "[liveness]") {
  Liveness l(2);
  const Clock::time_point t0{};
  CHECK_FALSE(l.has_arrived(1));
  l.arrived(1);  // its Join came; the round has not formed yet
  CHECK(l.has_arrived(1));
  CHECK_FALSE(l.quiet_for(1, t0).has_value());  // not watched before its Join returns
  CHECK(l.silent(1s, t0 + 1h).empty());
  l.arrived(5);  // an elastic slot beyond the first world
  CHECK(l.has_arrived(5));
  l.left(1);  // its worker is gone: the next one arrives afresh
  CHECK_FALSE(l.has_arrived(1));
  l.arrived(-1);
  l.arrived(Liveness::kMaxRanks);
  CHECK_FALSE(l.has_arrived(-1));
  CHECK_FALSE(l.has_arrived(Liveness::kMaxRanks));
}

}  // namespace hvd::daemon
