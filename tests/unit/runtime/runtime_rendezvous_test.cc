// Runtime and RendezvousClient against the real Rendezvous service, served
// in-process on a free port; ranks as threads, each with its own Runtime.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/grpc_server.h"
#include "daemon/rendezvous_service.h"
#include "fake_env.h"
#include "runtime/rendezvous_client.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

using common::StatusCode;
using testing::Env;
using testing::lookup_in;

namespace {

const char kToken[] = "0123456789abcdef-job-token";

// One job's rendezvous service on 127.0.0.1, port chosen by the kernel.
struct Job {
  explicit Job(int size) : service(kToken, size) {
    auto started = daemon::GrpcServer::start("127.0.0.1", 0, {&service});
    REQUIRE(started.is_ok());
    server = std::move(started).value();
  }
  ~Job() {
    service.close();
    server->shutdown(std::chrono::milliseconds(100));
  }

  Env env(int rank, int size) const {
    return {{"HVD_RANK", std::to_string(rank)},       {"HVD_SIZE", std::to_string(size)},
            {"HVD_RENDEZVOUS_ADDR", server->address()}, {"HVD_JOB_TOKEN", kToken},
            {"HVD_HOSTNAME", "testhost"},               {"HVD_START_TIMEOUT", "20"},
            {"HVD_TRANSPORT_TIMEOUT_SECONDS", "10"}};
  }

  daemon::RendezvousService service;
  std::unique_ptr<daemon::GrpcServer> server;
};

// Runs body(rank) on `size` threads; each returns "" or a problem. A rank
// that misses the deadline ends the process with status 1 (its thread still
// uses this frame, so the test cannot go on) instead of hanging.
std::vector<std::string> on_ranks(int size, const std::function<std::string(int)>& body) {
  std::vector<std::future<std::string>> results;
  for (int rank = 0; rank < size; ++rank) {
    results.push_back(std::async(std::launch::async, body, rank));
  }
  std::vector<std::string> problems;
  for (size_t rank = 0; rank < results.size(); ++rank) {
    if (results[rank].wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::fprintf(stderr, "rank thread %zu did not finish within 60 s; giving up\n", rank);
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::string p = results[rank].get();
    if (!p.empty()) problems.push_back("rank " + std::to_string(rank) + ": " + p);
  }
  return problems;
}

std::string collectives(Runtime& rt) {
  int rank = rt.world().rank;
  int size = rt.world().size;
  std::vector<int32_t> v(100, 2 * rank + 1);
  Status s = rt.allreduce(v.data(), 100, 3 /*int32*/, 1 /*average*/);
  if (!s.is_ok()) return "allreduce: " + s.to_string();
  if (v[99] != size) return "allreduce average gave " + std::to_string(v[99]);  // mean of 1, 3, 5...
  double d = rank == size - 1 ? 2.5 : 0.0;
  s = rt.broadcast(&d, 1, 8 /*float64*/, size - 1);
  if (!s.is_ok() || d != 2.5) return "broadcast: " + s.to_string();
  std::vector<int64_t> counts;
  for (int r = 0; r < size; ++r) counts.push_back(r);
  std::vector<int16_t> mine(static_cast<size_t>(rank), static_cast<int16_t>(rank));
  std::vector<int16_t> all(static_cast<size_t>(size * (size - 1) / 2));
  s = rt.allgather(mine.data(), rank, 2 /*int16*/, all.data(), counts.data());
  if (!s.is_ok()) return "allgather: " + s.to_string();
  if (!all.empty() && all.back() != size - 1) return "allgather gave " + std::to_string(all.back());
  s = rt.barrier();
  return s.is_ok() ? "" : "barrier: " + s.to_string();
}

}  // namespace

TEST_CASE("runtime: three ranks join, reduce, leave and join the next epoch", "[runtime]") {
  const int size = 3;
  Job job(size);
  std::vector<int64_t> epochs(size, -1);
  for (int round = 0; round < 2; ++round) {
    auto problems = on_ranks(size, [&](int rank) -> std::string {
      Env env = job.env(rank, size);
      auto rt = Runtime::init(lookup_in(env));
      if (!rt.is_ok()) return "init: " + rt.status().to_string();
      if (round == 1 && rt.value()->epoch() <= epochs[static_cast<size_t>(rank)]) {
        return "epoch did not advance: " + std::to_string(rt.value()->epoch());
      }
      epochs[static_cast<size_t>(rank)] = rt.value()->epoch();
      return collectives(*rt.value());
    });
    INFO("round " << round);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
  }
}

TEST_CASE("runtime: a wrong token is refused as unauthenticated", "[runtime]") {
  Job job(1);
  Env env = job.env(0, 1);
  env["HVD_JOB_TOKEN"] = "not-the-token";
  auto rt = Runtime::init(lookup_in(env));
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().code() == StatusCode::kUnauthenticated);
  CHECK_THAT(rt.status().message(), Catch::StartsWith("rendezvous Join at " + job.server->address()));
  CHECK_THAT(rt.status().message(), !Catch::Contains("not-the-token"));
}

TEST_CASE("runtime: init gives up when a rank never joins", "[runtime]") {
  Job job(2);
  Env env = job.env(0, 2);
  env["HVD_START_TIMEOUT"] = "1";
  auto start = std::chrono::steady_clock::now();
  auto rt = Runtime::init(lookup_in(env));
  auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(rt.is_ok());
  CHECK(rt.status().code() == StatusCode::kTimeout);
  CHECK(waited < std::chrono::seconds(8));
}

TEST_CASE("rendezvous client: the key-value calls", "[rendezvous_client]") {
  Job job(1);
  RendezvousClient client(job.server->address(), kToken, std::chrono::seconds(5));
  REQUIRE(client.set("a", std::string("\0bytes", 6)).is_ok());
  auto got = client.get({"a"}, std::chrono::seconds(1));
  REQUIRE(got.is_ok());
  CHECK(got.value() == std::vector<std::string>{std::string("\0bytes", 6)});
  CHECK(client.add("n", 5).value() == 5);
  CHECK(client.add("n", -2).value() == 3);
  CHECK(client.check({"a", "n"}).value());
  CHECK_FALSE(client.check({"a", "missing"}).value());
  CHECK(client.remove("a").value());
  CHECK_FALSE(client.remove("a").value());

  auto missing = client.get({"never"}, std::chrono::milliseconds(200));
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kTimeout);
  CHECK_THAT(missing.status().message(), Catch::StartsWith("rendezvous Get at "));
}

TEST_CASE("rendezvous client: an address nobody serves fails by the deadline", "[rendezvous_client]") {
  RendezvousClient client("127.0.0.1:1", kToken, std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  Status s = client.set("a", "b");
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Catch::StartsWith("rendezvous Set at 127.0.0.1:1"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

}  // namespace hvd::runtime
