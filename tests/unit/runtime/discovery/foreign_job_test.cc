// Workers of a foreign launcher, ranks as threads in this process: rank 0
// hosts the rendezvous (RendezvousHost), the others find it, everyone
// shuts down through the finish protocol and initializes again.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "tests/unit/runtime/fake_env.h"
#include "runtime/discovery/rendezvous_host.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

using common::StatusCode;
using testing::Env;
using testing::lookup_in;
using Clock = std::chrono::steady_clock;

namespace {

// A listening socket on 127.0.0.1 (port chosen by the kernel); closing it
// frees the port for the test to use.
struct PortHolder {
  PortHolder() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t n = sizeof(a);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0);
    port = ntohs(a.sin_port);
  }
  ~PortHolder() { release(); }
  void release() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  int fd = -1;
  int port = 0;
};

int free_port() {
  PortHolder holder;
  return holder.port;
}

Env slurm_env(int rank, int size, int port) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(size)},
          {"SLURM_LOCALID", std::to_string(rank)},
          {"SLURM_NODEID", "0"},
          {"SLURM_NNODES", "1"},
          {"SLURM_STEP_NODELIST", "localhost"},
          {"SLURM_TASKS_PER_NODE", std::to_string(size)},
          {"SLURM_JOB_ID", "77"},
          {"SLURM_STEP_ID", "0"},
          {"HVD_RENDEZVOUS_PORT", std::to_string(port)},
          {"HVD_START_TIMEOUT", "20"},
          {"HVD_TRANSPORT_TIMEOUT_SECONDS", "10"}};
}

// Runs body(rank) on `size` threads; each returns "" or a problem. A thread
// that misses the deadline ends the process (it still uses this frame).
std::vector<std::string> on_ranks(int size, const std::function<std::string(int)>& body) {
  std::vector<std::future<std::string>> results;
  for (int rank = 0; rank < size; ++rank) {
    results.push_back(std::async(std::launch::async, body, rank));
  }
  std::vector<std::string> problems;
  for (size_t rank = 0; rank < results.size(); ++rank) {
    if (results[rank].wait_for(std::chrono::seconds(90)) != std::future_status::ready) {
      std::fprintf(stderr, "rank thread %zu did not finish within 90 s; giving up\n", rank);
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::string p = results[rank].get();
    if (!p.empty()) problems.push_back("rank " + std::to_string(rank) + ": " + p);
  }
  return problems;
}

std::string sum_check(Runtime& rt) {
  int64_t v = rt.world().rank + 1;
  auto s = rt.allreduce(&v, 1, HVD_INT64, HVD_OP_SUM);
  if (!s.is_ok()) return "allreduce: " + s.to_string();
  const int64_t n = rt.world().size;
  if (v != n * (n + 1) / 2) return "allreduce gave " + std::to_string(v);
  return "";
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

TEST_CASE("foreign job: Slurm ranks meet at rank 0, leave, and meet again", "[foreign_job]") {
  const int size = 3;
  const int port = free_port();
  for (int round = 0; round < 2; ++round) {
    auto problems = on_ranks(size, [&](int rank) -> std::string {
      Env env = slurm_env(rank, size, port);
      if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));  // others first
      auto rt = Runtime::init(lookup_in(env));
      if (!rt.is_ok()) return "init: " + rt.status().to_string();
      const WorldInfo& w = rt.value()->world();
      if (w.launcher != "slurm" || w.rank != rank || w.size != size || w.local_rank != rank ||
          w.local_size != size || w.cross_rank != 0 || w.cross_size != 1) {
        return "world " + std::to_string(w.rank) + "/" + std::to_string(w.size);
      }
      if (w.rendezvous_addr != "127.0.0.1:" + std::to_string(port)) return w.rendezvous_addr;
      std::string p = sum_check(*rt.value());
      if (!p.empty()) return p;
      const auto begin = Clock::now();
      rt.value()->shutdown();
      if (seconds_since(begin) > 10) return "shutdown took " + std::to_string(seconds_since(begin));
      return "";
    });
    INFO("round " << round);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
  }
  // Rank 0 closed the service: the port is free again.
  PortHolder again;
  CHECK(again.port != 0);
}

TEST_CASE("foreign job: a shutdown right after init, then init at once", "[foreign_job]") {
  const int size = 2;
  const int port = free_port();
  auto problems = on_ranks(size, [&](int rank) -> std::string {
    Env env = slurm_env(rank, size, port);
    for (int round = 0; round < 3; ++round) {
      auto rt = Runtime::init(lookup_in(env));
      if (!rt.is_ok()) return "round " + std::to_string(round) + ": " + rt.status().to_string();
      std::string p = sum_check(*rt.value());
      if (!p.empty()) return p;
      rt.value()->shutdown();
    }
    return "";
  });
  for (const auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
}

TEST_CASE("foreign job: Open MPI across hosts finds the cross ranks", "[foreign_job]") {
  // Two "hosts", mapped by node: rank r on host r % 2 with local rank r / 2.
  const int size = 4;
  const int port = free_port();
  std::vector<std::pair<int, int>> cross(size);
  auto problems = on_ranks(size, [&](int rank) -> std::string {
    Env env{{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
            {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
            {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank / 2)},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
            {"HVD_RENDEZVOUS_HOST", "127.0.0.1"},
            {"HVD_RENDEZVOUS_PORT", std::to_string(port)},
            {"HVD_BIND_ADDRESS", "127.0.0.1"},
            {"HVD_START_TIMEOUT", "20"}};
    auto rt = Runtime::init(lookup_in(env));
    if (!rt.is_ok()) return "init: " + rt.status().to_string();
    cross[static_cast<size_t>(rank)] = {rt.value()->world().cross_rank,
                                        rt.value()->world().cross_size};
    return sum_check(*rt.value());
  });
  for (const auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  CHECK(cross == std::vector<std::pair<int, int>>{{0, 2}, {1, 2}, {0, 2}, {1, 2}});
}

TEST_CASE("foreign job: without rank 0 the others give up at the start timeout", "[foreign_job]") {
  const int port = free_port();
  Env env = slurm_env(1, 2, port);
  env["HVD_START_TIMEOUT"] = "2";
  const auto begin = Clock::now();
  auto rt = Runtime::init(lookup_in(env));
  const double took = seconds_since(begin);
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().code() == StatusCode::kTimeout);
  CHECK_THAT(rt.status().message(),
             Catch::Contains("the job's rendezvous at 127.0.0.1:" + std::to_string(port) +
                             " did not answer within 2 s (HVD_START_TIMEOUT)") &&
                 Catch::Contains("rank 0 hosts it when slurm starts the job"));
  CHECK(took >= 1.5);
  CHECK(took < 6);
}

TEST_CASE("foreign job: rank 0 names a port that is taken", "[foreign_job]") {
  PortHolder taken;
  Env env = slurm_env(0, 2, taken.port);
  auto rt = Runtime::init(lookup_in(env));
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(rt.status().message(),
             Catch::Contains("rank 0 cannot host the job's rendezvous on port " +
                             std::to_string(taken.port)) &&
                 Catch::Contains("set HVD_RENDEZVOUS_PORT to a free port"));
}

// Two nodes whose names resolve nowhere (.invalid, RFC 6761) and that Slurm
// gives no address for: every rank fails at once, in words for its rank.
Env unresolvable_nodes(int rank) {
  Env env = slurm_env(rank, 2, free_port());
  env["SLURM_NNODES"] = "2";
  env["SLURM_NODEID"] = std::to_string(rank);
  env["SLURM_LOCALID"] = "0";
  env["SLURM_STEP_NODELIST"] = "node[1-2].invalid";
  env["SLURM_TASKS_PER_NODE"] = "1(x2)";
  env["HVD_BIND_ADDRESS"] = "127.0.0.1";
  return env;
}

TEST_CASE("foreign job: a rendezvous host that does not resolve fails at once", "[foreign_job]") {
  const auto begin = Clock::now();
  auto rank0 = Runtime::init(lookup_in(unresolvable_nodes(0)));
  auto rank1 = Runtime::init(lookup_in(unresolvable_nodes(1)));
  CHECK(seconds_since(begin) < 15);  // scontrol may be asked; no start timeout is waited
  REQUIRE_FALSE(rank0.is_ok());
  REQUIRE_FALSE(rank1.is_ok());
  CHECK(rank0.status().code() == StatusCode::kUnavailable);
  CHECK(rank1.status().code() == StatusCode::kUnavailable);
  const std::string where =
      "'node1.invalid' (Slurm node node1.invalid, the first of SLURM_STEP_NODELIST, by name";
  CHECK_THAT(rank0.status().message(),
             Catch::StartsWith("this rank (rank 0) hosts the job's rendezvous, and every rank "
                               "reaches it at " + where) &&
                 Catch::Contains("which does not resolve on this host") &&
                 Catch::Contains("set HVD_RENDEZVOUS_HOST to an address of this host"));
  CHECK_THAT(rank1.status().message(),
             Catch::StartsWith("rank 0 hosts the job's rendezvous at " + where) &&
                 Catch::Contains("which does not resolve on this host") &&
                 Catch::Contains("set HVD_RENDEZVOUS_HOST to the address of rank 0's host"));
}

TEST_CASE("foreign job: rank 0 that cannot reach its own rendezvous says so", "[foreign_job]") {
  Env env = unresolvable_nodes(0);
  env["HVD_RENDEZVOUS_HOST"] = "192.0.2.1";  // TEST-NET-1: resolves, is not this host
  env["HVD_START_TIMEOUT"] = "1";
  auto rt = Runtime::init(lookup_in(env));
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().code() == StatusCode::kTimeout);
  CHECK_THAT(rt.status().message(),
             Catch::StartsWith("this rank (rank 0) hosts the job's rendezvous but could not "
                               "reach it at 192.0.2.1:") &&
                 Catch::Contains("is '192.0.2.1' (HVD_RENDEZVOUS_HOST) an address of this host?") &&
                 !Catch::Contains("did rank 0 start"));
}

TEST_CASE("foreign job: rank 0 stops waiting for ranks that never finish", "[foreign_job]") {
  auto host = RendezvousHost::start("127.0.0.1", 0, "token", 3);
  REQUIRE(host.is_ok());
  const auto begin = Clock::now();
  host.value()->finish(std::chrono::milliseconds(300));
  CHECK(seconds_since(begin) >= 0.25);
  CHECK(seconds_since(begin) < 5);
  host.value()->close();  // idempotent
}

}  // namespace hvd::runtime
