#include "launcher/worker_env.h"

#include <catch2/catch.hpp>

using namespace hvd::launcher;

TEST_CASE("worker environment layers: base < settings < -x < contract") {
  Environment base = {
      {"PATH", "/usr/bin"}, {"HVD_RANK", "99"}, {"HVD_START_TIMEOUT", "7"}, {"KEEP", "me"}};
  Environment settings = {{"HVD_START_TIMEOUT", "30"}, {"HVD_LOG_LEVEL", "warning"}};
  std::vector<std::pair<std::string, std::string>> extra = {{"FOO", "bar"},
                                                            {"HVD_LOG_LEVEL", "debug"}};
  RankSlot slot{3, "nodeB", 1, 2, 1, 2};
  JobContext job{"job-1", "s3cr3t", "127.0.0.1:5000", "127.0.0.1", 4};

  Environment env = worker_environment(base, settings, extra, slot, job);
  CHECK(env.at("PATH") == "/usr/bin");
  CHECK(env.at("KEEP") == "me");
  CHECK(env.at("HVD_START_TIMEOUT") == "30");
  CHECK(env.at("HVD_LOG_LEVEL") == "debug");
  CHECK(env.at("FOO") == "bar");
  CHECK(env.at("HVD_RANK") == "3");
  CHECK(env.at("HVD_SIZE") == "4");
  CHECK(env.at("HVD_LOCAL_RANK") == "1");
  CHECK(env.at("HVD_LOCAL_SIZE") == "2");
  CHECK(env.at("HVD_CROSS_RANK") == "1");
  CHECK(env.at("HVD_CROSS_SIZE") == "2");
  CHECK(env.at("HVD_RENDEZVOUS_ADDR") == "127.0.0.1:5000");
  CHECK(env.at("HVD_JOB_TOKEN") == "s3cr3t");
  CHECK(env.at("HVD_JOB_ID") == "job-1");
  CHECK(env.at("HVD_HOSTNAME") == "nodeB");
  CHECK(env.at("HVD_BIND_ADDRESS") == "127.0.0.1");

  std::string shown = describe_worker_environment(env, extra);
  CHECK_THAT(shown, Catch::Contains("HVD_JOB_TOKEN=***"));
  CHECK_THAT(shown, Catch::Contains("HVD_RANK=3"));
  CHECK_THAT(shown, Catch::Contains("FOO=bar"));
  CHECK_THAT(shown, !Catch::Contains("s3cr3t"));
  CHECK_THAT(shown, !Catch::Contains("PATH="));
}

TEST_CASE("current_environment reads environ") {
  REQUIRE(setenv("HVD_LAUNCHER_TEST_VAR", "a=b", 1) == 0);
  Environment env = current_environment();
  CHECK(env.at("HVD_LAUNCHER_TEST_VAR") == "a=b");
  unsetenv("HVD_LAUNCHER_TEST_VAR");
}

TEST_CASE("several workers on a host get one OpenMP thread each unless the user chose") {
  JobContext job{"job-1", "t", "127.0.0.1:5000", "127.0.0.1", 4};
  RankSlot shared{0, "a", 0, 2, 0, 1};
  RankSlot alone{0, "a", 0, 1, 0, 1};
  CHECK(worker_environment({}, {}, {}, shared, job).at("OMP_NUM_THREADS") == "1");
  CHECK(worker_environment({}, {}, {}, alone, job).count("OMP_NUM_THREADS") == 0);
  CHECK(worker_environment({{"OMP_NUM_THREADS", "4"}}, {}, {}, shared, job).at("OMP_NUM_THREADS") ==
        "4");
  CHECK(worker_environment({}, {}, {{"OMP_NUM_THREADS", "2"}}, shared, job).at("OMP_NUM_THREADS") ==
        "2");
}
