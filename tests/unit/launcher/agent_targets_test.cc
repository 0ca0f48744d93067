#include "launcher/agent_targets.h"

#include <catch2/catch.hpp>

using namespace hvd::launcher;

namespace {

std::vector<RankSlot> plan(const std::vector<HostSlots>& hosts, int np) {
  auto p = plan_slots(hosts, np);
  REQUIRE(p.is_ok());
  return *p;
}

const LocalIdentity kMe{"me.example", {"10.0.0.1"}};

}  // namespace

TEST_CASE("all local hosts share the embedded agent") {
  auto targets =
      plan_agent_targets(plan({{"localhost", 1}, {"127.0.0.1", 1}, {"me", 2}}, 4), kMe, 29470);
  REQUIRE(targets.size() == 1);
  CHECK(targets[0].local);
  CHECK(targets[0].host == "localhost");
  CHECK(targets[0].address.empty());
  CHECK(targets[0].ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(first_remote(targets) == nullptr);
}

TEST_CASE("each remote host gets the hvd-agent at host:agent-port") {
  auto targets = plan_agent_targets(
      plan({{"h1", 2}, {"localhost", 1}, {"h2", 2}, {"10.0.0.1", 1}, {"fd00::7", 1}}, 7), kMe,
      4000);
  REQUIRE(targets.size() == 4);
  CHECK_FALSE(targets[0].local);
  CHECK(targets[0].host == "h1");
  CHECK(targets[0].address == "h1:4000");
  CHECK(targets[0].ranks == std::vector<int>{0, 1});
  CHECK(targets[1].local);
  CHECK(targets[1].host == "localhost");
  CHECK(targets[1].ranks == std::vector<int>{2, 5});  // localhost and 10.0.0.1
  CHECK(targets[2].host == "h2");
  CHECK(targets[2].address == "h2:4000");
  CHECK(targets[2].ranks == std::vector<int>{3, 4});
  CHECK(targets[3].host == "fd00::7");
  CHECK(targets[3].address == "[fd00::7]:4000");
  CHECK(targets[3].ranks == std::vector<int>{6});
  REQUIRE(first_remote(targets) != nullptr);
  CHECK(first_remote(targets)->host == "h1");
}

TEST_CASE("hosts without ranks get no agent") {
  auto targets = plan_agent_targets(plan({{"localhost", 2}, {"h2", 2}}, 2), kMe, 29470);
  REQUIRE(targets.size() == 1);
  CHECK(targets[0].local);
}

TEST_CASE("host_port and describe_ranks") {
  CHECK(host_port("h2", 29470) == "h2:29470");
  CHECK(host_port("10.0.0.2", 1) == "10.0.0.2:1");
  CHECK(host_port("::1", 5) == "[::1]:5");
  CHECK(host_port("[::1]", 5) == "[::1]:5");
  CHECK(describe_ranks({2}) == "rank 2");
  CHECK(describe_ranks({2, 3}) == "ranks 2, 3");
}
