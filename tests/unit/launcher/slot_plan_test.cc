#include "launcher/slot_plan.h"

#include <catch2/catch.hpp>

using namespace hvd::launcher;

namespace {

struct Expect {
  int rank;
  const char* host;
  int local_rank, local_size, cross_rank, cross_size;
};

void check_plan(const std::vector<RankSlot>& plan, const std::vector<Expect>& expected) {
  REQUIRE(plan.size() == expected.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    INFO("rank " << i);
    CHECK(plan[i].rank == expected[i].rank);
    CHECK(plan[i].size == static_cast<int>(plan.size()));
    CHECK(plan[i].host == expected[i].host);
    CHECK(plan[i].local_rank == expected[i].local_rank);
    CHECK(plan[i].local_size == expected[i].local_size);
    CHECK(plan[i].cross_rank == expected[i].cross_rank);
    CHECK(plan[i].cross_size == expected[i].cross_size);
  }
}

}  // namespace

TEST_CASE("host-major plan with uneven hosts a:2 b:2 c:1 and np 5") {
  auto plan = plan_slots({{"a", 2}, {"b", 2}, {"c", 1}}, 5);
  REQUIRE(plan.is_ok());
  check_plan(*plan, {
                        {0, "a", 0, 2, 0, 3},
                        {1, "a", 1, 2, 0, 2},
                        {2, "b", 0, 2, 1, 3},
                        {3, "b", 1, 2, 1, 2},
                        {4, "c", 0, 1, 2, 3},
                    });
  CHECK(planned_hosts(*plan) == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("np smaller than the slots uses the first slots only") {
  auto plan = plan_slots({{"a", 2}, {"b", 2}, {"c", 1}}, 3);
  REQUIRE(plan.is_ok());
  check_plan(*plan, {
                        {0, "a", 0, 2, 0, 2},
                        {1, "a", 1, 2, 0, 1},
                        {2, "b", 0, 1, 1, 2},
                    });
  CHECK(planned_hosts(*plan) == std::vector<std::string>{"a", "b"});

  auto one = plan_slots({{"a", 4}, {"b", 4}}, 1);
  REQUIRE(one.is_ok());
  check_plan(*one, {{0, "a", 0, 1, 0, 1}});
}

TEST_CASE("two local hosts of two slots each") {
  auto plan = plan_slots({{"localhost", 2}, {"127.0.0.1", 2}}, 4);
  REQUIRE(plan.is_ok());
  check_plan(*plan, {
                        {0, "localhost", 0, 2, 0, 2},
                        {1, "localhost", 1, 2, 0, 2},
                        {2, "127.0.0.1", 0, 2, 1, 2},
                        {3, "127.0.0.1", 1, 2, 1, 2},
                    });
}

TEST_CASE("a smaller host in the middle") {
  auto plan = plan_slots({{"a", 3}, {"b", 1}, {"c", 2}}, 6);
  REQUIRE(plan.is_ok());
  check_plan(*plan, {
                        {0, "a", 0, 3, 0, 3},
                        {1, "a", 1, 3, 0, 2},
                        {2, "a", 2, 3, 0, 1},
                        {3, "b", 0, 1, 1, 3},
                        {4, "c", 0, 2, 2, 3},
                        {5, "c", 1, 2, 1, 2},
                    });
}

TEST_CASE("np larger than the slots or below 1 is refused") {
  auto big = plan_slots({{"a", 2}, {"b", 2}, {"c", 1}}, 6);
  REQUIRE_FALSE(big.is_ok());
  CHECK_THAT(big.status().message(), Catch::Contains("-np 6") && Catch::Contains("5 slots") &&
                                         Catch::Contains("a:2, b:2, c:1"));
  auto zero = plan_slots({{"a", 2}}, 0);
  REQUIRE_FALSE(zero.is_ok());
  CHECK_THAT(zero.status().message(), Catch::Contains("-np 0"));
}
