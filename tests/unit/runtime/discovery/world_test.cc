#include <catch2/catch.hpp>

#include "tests/unit/runtime/fake_env.h"
#include "runtime/discovery/world.h"

namespace hvd::runtime {

using testing::Env;
using testing::lookup_in;

namespace {

const char kToken[] = "s3cr3t-t0ken-value";

Env launched(int rank, int size) {
  return {{"HVD_RANK", std::to_string(rank)},
          {"HVD_SIZE", std::to_string(size)},
          {"HVD_RENDEZVOUS_ADDR", "10.0.0.1:4000"},
          {"HVD_JOB_TOKEN", kToken}};
}

std::string error_of(const Env& env) {
  auto world = read_world(lookup_in(env));
  REQUIRE_FALSE(world.is_ok());
  CHECK(world.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(world.status().message(), !Catch::Contains(kToken));
  return world.status().message();
}

}  // namespace

TEST_CASE("world: no variables at all is a world of one", "[world]") {
  Env env;
  auto world = read_world(lookup_in(env));
  REQUIRE(world.is_ok());
  CHECK(world->rank == 0);
  CHECK(world->size == 1);
  CHECK(world->local_rank == 0);
  CHECK(world->local_size == 1);
  CHECK(world->cross_rank == 0);
  CHECK(world->cross_size == 1);
  CHECK_FALSE(world->has_rendezvous());
  CHECK_FALSE(world->host.empty());
  CHECK(world->bind_address == "127.0.0.1");
}

TEST_CASE("world: everything a launcher sets", "[world]") {
  Env env = launched(5, 8);
  env["HVD_LOCAL_RANK"] = "1";
  env["HVD_LOCAL_SIZE"] = "4";
  env["HVD_CROSS_RANK"] = "1";
  env["HVD_CROSS_SIZE"] = "2";
  env["HVD_JOB_ID"] = "job-7";
  env["HVD_HOSTNAME"] = "node-b";
  env["HVD_BIND_ADDRESS"] = "10.0.0.2";
  auto world = read_world(lookup_in(env));
  REQUIRE(world.is_ok());
  CHECK(world->rank == 5);
  CHECK(world->size == 8);
  CHECK(world->local_rank == 1);
  CHECK(world->local_size == 4);
  CHECK(world->cross_rank == 1);
  CHECK(world->cross_size == 2);
  CHECK(world->rendezvous_addr == "10.0.0.1:4000");
  CHECK(world->job_token == kToken);
  CHECK(world->job_id == "job-7");
  CHECK(world->host == "node-b");
  CHECK(world->bind_address == "10.0.0.2");
}

TEST_CASE("world: local and cross values default to one host", "[world]") {
  auto world = read_world(lookup_in(launched(2, 3)));
  REQUIRE(world.is_ok());
  CHECK(world->local_rank == 2);
  CHECK(world->local_size == 3);
  CHECK(world->cross_rank == 0);
  CHECK(world->cross_size == 1);
}

TEST_CASE("world: malformed numbers name the variable and its value", "[world]") {
  Env env = launched(0, 2);
  SECTION("not a number") {
    env["HVD_RANK"] = "abc";
    CHECK(error_of(env) == "HVD_RANK='abc' is not a whole number");
  }
  SECTION("trailing garbage") {
    env["HVD_SIZE"] = "2x";
    CHECK(error_of(env) == "HVD_SIZE='2x' is not a whole number");
  }
  SECTION("empty") {
    env["HVD_LOCAL_RANK"] = "";
    env["HVD_LOCAL_SIZE"] = "1";
    CHECK(error_of(env) == "HVD_LOCAL_RANK='' is not a whole number");
  }
  SECTION("too large for an int") {
    env["HVD_CROSS_RANK"] = "99999999999";
    env["HVD_CROSS_SIZE"] = "1";
    CHECK(error_of(env) == "HVD_CROSS_RANK='99999999999' is not a whole number");
  }
}

TEST_CASE("world: inconsistent values name the variable", "[world]") {
  SECTION("rank not below size") {
    CHECK(error_of(launched(4, 4)) == "HVD_RANK='4' is not in [0, HVD_SIZE=4)");
  }
  SECTION("negative rank") {
    CHECK(error_of(launched(-1, 4)) == "HVD_RANK='-1' is not in [0, HVD_SIZE=4)");
  }
  SECTION("size zero") {
    CHECK(error_of(launched(0, 0)) == "HVD_SIZE='0' must be at least 1");
  }
  SECTION("rank without size") {
    Env env = launched(1, 2);
    env.erase("HVD_SIZE");
    CHECK(error_of(env) == "HVD_RANK='1' is set but HVD_SIZE is not");
  }
  SECTION("local rank beyond local size") {
    Env env = launched(1, 4);
    env["HVD_LOCAL_RANK"] = "2";
    env["HVD_LOCAL_SIZE"] = "2";
    CHECK(error_of(env) == "HVD_LOCAL_RANK='2' is not in [0, HVD_LOCAL_SIZE=2)");
  }
  SECTION("local size beyond size") {
    Env env = launched(1, 4);
    env["HVD_LOCAL_RANK"] = "1";
    env["HVD_LOCAL_SIZE"] = "8";
    CHECK(error_of(env) == "HVD_LOCAL_SIZE='8' exceeds HVD_SIZE=4");
  }
  SECTION("cross size without cross rank") {
    Env env = launched(1, 4);
    env["HVD_CROSS_SIZE"] = "2";
    CHECK(error_of(env) == "HVD_CROSS_SIZE='2' is set but HVD_CROSS_RANK is not");
  }
  SECTION("a rendezvous but no rank") {
    Env env{{"HVD_RENDEZVOUS_ADDR", "10.0.0.1:4000"}};
    CHECK(error_of(env) == "HVD_RENDEZVOUS_ADDR='10.0.0.1:4000' is set but HVD_RANK and HVD_SIZE are not");
  }
}

TEST_CASE("world: a multi-rank world needs the rendezvous and the token", "[world]") {
  SECTION("no rendezvous address") {
    Env env = launched(0, 2);
    env.erase("HVD_RENDEZVOUS_ADDR");
    CHECK(error_of(env) == "HVD_RENDEZVOUS_ADDR is not set (HVD_SIZE=2 needs the job's rendezvous)");
  }
  SECTION("no token") {
    Env env = launched(0, 2);
    env.erase("HVD_JOB_TOKEN");
    CHECK(error_of(env) == "HVD_JOB_TOKEN is not set (the rendezvous at 10.0.0.1:4000 requires it)");
  }
  SECTION("empty token") {
    Env env = launched(0, 2);
    env["HVD_JOB_TOKEN"] = "";
    CHECK(error_of(env) == "HVD_JOB_TOKEN is empty (the rendezvous at 10.0.0.1:4000 requires it)");
  }
  SECTION("a launched world of one still joins its rendezvous") {
    auto world = read_world(lookup_in(launched(0, 1)));
    REQUIRE(world.is_ok());
    CHECK(world->has_rendezvous());
  }
}

}  // namespace hvd::runtime
