#include "launcher/worker_environment.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "daemon/rendezvous/worker_credentials.h"

using namespace hvd::launcher;

TEST_CASE("worker environment layers: base < settings < -x < contract") {
  Environment base = {
      {"PATH", "/usr/bin"}, {"HVD_RANK", "99"}, {"HVD_START_TIMEOUT", "7"}, {"KEEP", "me"}};
  Environment settings = {{"HVD_START_TIMEOUT", "30"}, {"HVD_LOG_LEVEL", "warning"}};
  std::vector<std::pair<std::string, std::string>> extra = {{"FOO", "bar"},
                                                            {"HVD_LOG_LEVEL", "debug"}};
  RankSlot slot{.rank = 3, .local_rank = 1, .local_size = 2, .cross_rank = 1, .cross_size = 2,
                .host = "nodeB"};
  JobContext job{"job-1", "s3cr3t", "127.0.0.1:5000", "127.0.0.1", 4, {}};

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
  // The worker's own credential, never the job's token (issue 29).
  CHECK(env.at("HVD_JOB_TOKEN") == hvd::daemon::worker_credential("s3cr3t", 3));
  CHECK(env.at("HVD_JOB_ID") == "job-1");
  CHECK(env.at("HVD_HOSTNAME") == "nodeB");
  CHECK(env.at("HVD_BIND_ADDRESS") == "127.0.0.1");

  std::string shown = describe_worker_environment(env, extra);
  CHECK_THAT(shown, Catch::Contains("HVD_JOB_TOKEN=***"));
  CHECK_THAT(shown, Catch::Contains("HVD_RANK=3"));
  CHECK_THAT(shown, Catch::Contains("FOO=bar"));
  CHECK_THAT(shown, !Catch::Contains("s3cr3t"));
  CHECK_THAT(shown, !Catch::Contains(env.at("HVD_JOB_TOKEN")));
  CHECK_THAT(shown, !Catch::Contains("PATH="));
}

TEST_CASE("a -x HOROVOD_ alias of a setting is not hidden by hvdrun's HVD_ value") {
  Environment settings = {{"HVD_HIERARCHICAL_ALLREDUCE", "false"}, {"HVD_AUTOTUNE", "false"},
                          {"HVD_FUSION_THRESHOLD", "67108864"}};
  std::vector<std::pair<std::string, std::string>> extra = {
      {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
      {"HOROVOD_AUTOTUNE", "1"}, {"HVD_AUTOTUNE", "0"},  // -x names both: HVD_ wins, as in workers
      {"HOROVOD_FUSION_THRESHOLD", "1024"}, {"HOROVOD_FUSION_THRESHOLD", "2048"}};
  RankSlot slot{.rank = 0, .host = "a"};
  JobContext job{"job-1", "t", "10.0.0.1:5000", "10.0.0.3", 1, {}};
  Environment env = worker_environment({}, settings, extra, slot, job);
  CHECK(env.at("HVD_HIERARCHICAL_ALLREDUCE") == "1");
  CHECK(env.at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "1");
  CHECK(env.at("HVD_AUTOTUNE") == "0");
  CHECK(env.at("HVD_FUSION_THRESHOLD") == "2048");  // the last -x
}

TEST_CASE("current_environment reads environ") {
  REQUIRE(setenv("HVD_LAUNCHER_TEST_VAR", "a=b", 1) == 0);
  Environment env = current_environment();
  CHECK(env.at("HVD_LAUNCHER_TEST_VAR") == "a=b");
  unsetenv("HVD_LAUNCHER_TEST_VAR");
}

TEST_CASE("several workers on a host get one OpenMP thread each unless the user chose") {
  JobContext job{"job-1", "t", "127.0.0.1:5000", "127.0.0.1", 4, {}};
  RankSlot shared{.rank = 0, .local_size = 2, .host = "a"};
  RankSlot alone{.rank = 0, .host = "a"};
  CHECK(worker_environment({}, {}, {}, shared, job).at("OMP_NUM_THREADS") == "1");
  CHECK(worker_environment({}, {}, {}, alone, job).count("OMP_NUM_THREADS") == 0);
  CHECK(worker_environment({{"OMP_NUM_THREADS", "4"}}, {}, {}, shared, job).at("OMP_NUM_THREADS") ==
        "4");
  CHECK(worker_environment({}, {}, {{"OMP_NUM_THREADS", "2"}}, shared, job).at("OMP_NUM_THREADS") ==
        "2");
}

TEST_CASE("workers get horovodrun's variables with the same values as the HVD_ ones") {
  RankSlot slot{.rank = 5, .local_rank = 1, .local_size = 3, .cross_rank = 2, .cross_size = 4,
                .host = "nodeC"};
  JobContext job{"job-1", "t", "10.0.0.1:5000", "10.0.0.3", 12, {}};
  Environment env = worker_environment({}, {}, {}, slot, job);
  const std::pair<const char*, const char*> same[] = {
      {"HOROVOD_RANK", "5"},       {"HOROVOD_SIZE", "12"},      {"HOROVOD_LOCAL_RANK", "1"},
      {"HOROVOD_LOCAL_SIZE", "3"}, {"HOROVOD_CROSS_RANK", "2"}, {"HOROVOD_CROSS_SIZE", "4"},
      {"HOROVOD_HOSTNAME", "nodeC"}};
  for (const auto& [name, value] : same) {
    INFO(name);
    CHECK(env.at(name) == value);
    std::string hvd_name = std::string("HVD_") + (name + std::string_view("HOROVOD_").size());
    CHECK(env.at(hvd_name) == value);
  }
  CHECK(env.at("HOROVOD_CONTROLLER") == "gloo");
  CHECK(env.at("HOROVOD_CPU_OPERATIONS") == "gloo");
  // Without --network-interface: no interface is named.
  CHECK(env.count("HOROVOD_GLOO_IFACE") == 0);
  CHECK(env.count("NCCL_SOCKET_IFNAME") == 0);
  // Horovod's HTTP rendezvous is not ours: never pointed at.
  CHECK(env.count("HOROVOD_GLOO_RENDEZVOUS_ADDR") == 0);
  CHECK(env.count("HOROVOD_GLOO_RENDEZVOUS_PORT") == 0);
  CHECK(env.at("PYTHONUNBUFFERED") == "1");
}

TEST_CASE("worker env: with --network-interface, HOROVOD_GLOO_IFACE is the first, NCCL_SOCKET_IFNAME all") {
  RankSlot slot{.rank = 0, .host = "a"};
  JobContext job{"job-1", "t", "10.0.0.1:5000", "10.0.0.3", 1, {"eth1", "ib0"}};
  Environment env = worker_environment({}, {}, {}, slot, job);
  CHECK(env.at("HOROVOD_GLOO_IFACE") == "eth1");
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "eth1,ib0");
}

TEST_CASE("hvdrun's HOROVOD_ values override inherited and -x ones, as horovodrun's do") {
  RankSlot slot{.rank = 1, .local_rank = 1, .local_size = 2, .host = "b"};
  JobContext job{"job-1", "t", "10.0.0.1:5000", "10.0.0.3", 2, {"eth0"}};
  Environment base = {{"HOROVOD_RANK", "7"}, {"HOROVOD_CONTROLLER", "mpi"},
                      {"HOROVOD_FUSION_THRESHOLD", "1024"}, {"PYTHONUNBUFFERED", ""}};
  std::vector<std::pair<std::string, std::string>> extra = {
      {"HOROVOD_SIZE", "9"}, {"HOROVOD_CPU_OPERATIONS", "mpi"}, {"HOROVOD_GLOO_IFACE", "lo"},
      {"NCCL_SOCKET_IFNAME", "lo"}};
  Environment env = worker_environment(base, {}, extra, slot, job);
  CHECK(env.at("HOROVOD_RANK") == "1");
  CHECK(env.at("HOROVOD_SIZE") == "2");
  CHECK(env.at("HOROVOD_CONTROLLER") == "gloo");
  CHECK(env.at("HOROVOD_CPU_OPERATIONS") == "gloo");
  CHECK(env.at("HOROVOD_GLOO_IFACE") == "eth0");
  CHECK(env.at("NCCL_SOCKET_IFNAME") == "eth0");
  // What hvdrun does not set passes through; the user's PYTHONUNBUFFERED stays.
  CHECK(env.at("HOROVOD_FUSION_THRESHOLD") == "1024");
  CHECK(env.at("PYTHONUNBUFFERED").empty());

  std::string shown = describe_worker_environment(env, extra);
  CHECK_THAT(shown, Catch::Contains("HOROVOD_RANK=1"));
  CHECK_THAT(shown, Catch::Contains("HOROVOD_CONTROLLER=gloo"));
}
