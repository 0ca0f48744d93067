// HVD_TEST_FAULT's parser (runtime/fault_point.h): what it accepts, and a
// malformed value refused naming the bad token (never ignored). Firing is
// tested end to end by the elastic tests (a fault kills its own process).
#include <catch2/catch.hpp>

#include "runtime/fault_point.h"

namespace hvd::runtime {

TEST_CASE("HVD_TEST_FAULT: points, actions and filters parse", "[runtime][fault_point]") {
  CHECK(FaultPoints::parse("").value().empty());
  for (const char* spec : {"joined:kill", "keys:stop:round=0:slot=3:key=cpu/3",
                           "connected:exit:round=2,joined:kill:slot=1"}) {
    INFO(spec);
    auto parsed = FaultPoints::parse(spec);
    REQUIRE(parsed.is_ok());
    CHECK_FALSE(parsed.value().empty());
  }
}

TEST_CASE("HVD_TEST_FAULT: heartbeat:pause=S pauses one slot's heartbeat", "[runtime][fault_point]") {
  auto parsed = FaultPoints::parse("heartbeat:pause=7:slot=2,joined:kill:slot=9");
  REQUIRE(parsed.is_ok());
  CHECK(parsed.value().heartbeat_pause(0, 2) == 7);
  CHECK(parsed.value().heartbeat_pause(3, 2) == 7);
  CHECK(parsed.value().heartbeat_pause(0, 1) == 0);
  parsed.value().reach("heartbeat", 0, 2);  // no action of its own at reach()
  CHECK(FaultPoints::parse("joined:kill").value().heartbeat_pause(0, 0) == 0);
}

TEST_CASE("HVD_TEST_FAULT: a malformed value names its bad token", "[runtime][fault_point]") {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c : {
           Case{"joined", "'joined' is not <point>:<action>[:round=N][:slot=S][:key=K]"},
           Case{"started:kill", "'started' is not a fault point (joined, keys, connected, heartbeat)"},
           Case{"heartbeat:kill", "'kill' is not the heartbeat's action (pause=S, S > 0 seconds)"},
           Case{"heartbeat:pause=0", "'pause=0' is not the heartbeat's action (pause=S, S > 0 seconds)"},
           Case{"joined:hang", "'hang' is not a fault action (kill, stop, exit)"},
           Case{"joined:kill:key=cpu/3", "'key=cpu/3' is not round=N or slot=S"},
           Case{"keys:kill:key=", "'key=' is not round=N, slot=S or key=K"},
           Case{"keys:kill:round=-1", "'round=-1' is not round=N, slot=S or key=K"},
       }) {
    INFO(c.spec);
    auto parsed = FaultPoints::parse(c.spec);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.status().message() == std::string("HVD_TEST_FAULT: ") + c.message);
  }
}

}  // namespace hvd::runtime
