// proto/refusal_log.h: one line per interval, with the count not shown.
#include "proto/refusal_log.h"

#include <catch2/catch.hpp>

namespace hvd::proto {

TEST_CASE("refusal log: the first of an interval is shown, the rest counted", "[auth]") {
  using namespace std::chrono_literals;
  RefusalLog log(10s);
  const auto t0 = RefusalLog::Clock::time_point{} + 1h;
  CHECK(log.admit("refused a", t0) == "refused a");
  for (int i = 0; i < 4999; ++i) CHECK_FALSE(log.admit("refused b", t0 + 1ms * i).has_value());
  CHECK(log.admit("refused c", t0 + 10s) ==
        "refused c (4999 more refused calls not shown since the last line)");
  CHECK_FALSE(log.admit("refused d", t0 + 11s).has_value());
  CHECK(log.admit("refused e", t0 + 20s) ==
        "refused e (1 more refused call not shown since the last line)");
  CHECK(log.admit("refused f", t0 + 31s) == "refused f");
}

}  // namespace hvd::proto
