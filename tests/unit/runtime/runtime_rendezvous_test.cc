// Runtime and RendezvousClient against the real Rendezvous service, served
// in-process on a free port; ranks as threads, each with its own Runtime.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous_job.h"
#include "daemon/rendezvous/rendezvous_client.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

using common::StatusCode;
using testing::Env;
using testing::Job;
using testing::kToken;
using testing::lookup_in;

namespace {

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

TEST_CASE("runtime: three ranks join, reduce, leave and join the next round", "[runtime]") {
  const int size = 3;
  Job job(size);
  std::vector<int64_t> rounds_seen(size, -1);
  for (int round = 0; round < 2; ++round) {
    auto problems = on_ranks(size, [&](int rank) -> std::string {
      Env env = job.env(rank, size);
      auto rt = Runtime::init(lookup_in(env));
      if (!rt.is_ok()) return "init: " + rt.status().to_string();
      if (round == 1 && rt.value()->round() <= rounds_seen[static_cast<size_t>(rank)]) {
        return "round did not advance: " + std::to_string(rt.value()->round());
      }
      rounds_seen[static_cast<size_t>(rank)] = rt.value()->round();
      return collectives(*rt.value());
    });
    INFO("round " << round);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
  }
}

namespace {

// An op of the C ABI's shape for the Runtime.
hvd_op op_of(int32_t type, int64_t* shape, void* data, int32_t set = 0, const char* name = nullptr) {
  hvd_op op = hvd_op_defaults(type);
  op.name = name;
  op.input = data;
  op.output = type == HVD_OPTYPE_ALLREDUCE ? data : nullptr;
  op.shape = shape;
  op.ndim = 1;
  op.dtype = HVD_INT64;
  op.process_set_id = set;
  return op;
}

std::string process_sets_async_ops_and_shutdown(Runtime& rt, const std::string& timeline) {
  const int rank = rt.world().rank;
  int64_t one = 1;
  // A set of ranks 0 and 1; rank 2 is not in it.
  std::vector<int32_t> members{1, 0};
  auto id = rt.add_process_set(members);
  if (!id.is_ok()) return "add_process_set: " + id.status().to_string();
  if (id.value() != 1) return "first set id " + std::to_string(id.value());
  auto set = rt.process_set(1);
  if (!set.is_ok() || set.value()->rank != (rank < 2 ? rank : -1) ||
      set.value()->ranks != std::vector<int>{0, 1}) {
    return "process set 1 as seen from here";
  }
  int64_t v = rank + 1;
  hvd_op op = op_of(HVD_OPTYPE_ALLREDUCE, &one, &v, 1, "in-set");
  auto h = rt.enqueue(op);
  if (rank == 2) {
    if (h.is_ok() || h.status().code() != StatusCode::kInvalidArgument ||
        h.status().message() != "rank 2 is not a member of process set 1 (ranks [0, 1])") {
      return "non-member enqueue: " + h.status().to_string();
    }
  } else {
    if (!h.is_ok()) return "enqueue in set: " + h.status().to_string();
    Status s = rt.handles().wait(h.value(), std::chrono::duration<double>(30));
    if (!s.is_ok() || v != 3) return "allreduce in set: " + s.to_string();
    (void)rt.handles().release(h.value());
  }
  // The ranks disagree: every rank fails, and the next set still gets id 2.
  std::vector<int32_t> odd{rank == 0 ? 0 : 2};
  auto bad = rt.add_process_set(odd);
  if (bad.is_ok() || bad.status().message().find("the ranks made different calls") == std::string::npos) {
    return "disagreeing add: " + bad.status().to_string();
  }
  std::vector<int32_t> all{0, 1, 2};
  auto second = rt.add_process_set(all);
  if (!second.is_ok() || second.value() != 2) return "second set: " + second.status().to_string();
  if (!rt.remove_process_set(1).is_ok() || !rt.remove_process_set(2).is_ok()) return "remove";
  if (rt.process_set(1).status().code() != StatusCode::kNotFound) return "removed set still there";
  if (rt.remove_process_set(0).is_ok()) return "removed the global set";

  // Timeline started and stopped while the engine runs (rank 0 writes it).
  if (!rt.start_timeline(timeline).is_ok()) return "start_timeline";
  if (!rt.allreduce(&v, 1, HVD_INT64, HVD_OP_SUM).is_ok()) return "traced allreduce";
  if (!rt.stop_timeline().is_ok()) return "stop_timeline";

  // An op only this rank submits fails at shutdown instead of hanging.
  std::string lonely = "lonely-" + std::to_string(rank);
  hvd_op pending = op_of(HVD_OPTYPE_ALLREDUCE, &one, &v, 0, lonely.c_str());
  auto p = rt.enqueue(pending);
  if (!p.is_ok()) return "enqueue lonely: " + p.status().to_string();
  if (!rt.barrier().is_ok()) return "barrier";
  rt.shutdown();
  Status s = rt.handles().wait(p.value(), std::chrono::duration<double>(30));
  if (s.code() != StatusCode::kAborted || s.message().rfind("hvd is shutting down", 0) != 0) {
    return "pending op at shutdown: " + s.to_string();
  }
  if (rt.enqueue(pending).is_ok()) return "enqueue after shutdown";
  return "";
}

}  // namespace

TEST_CASE("runtime: process sets, async ops, timeline, shutdown", "[runtime]") {
  const int size = 3;
  Job job(size);
  char dir[] = "/tmp/hvd_runtime_test_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string timeline = std::string(dir) + "/timeline.json";
  auto problems = on_ranks(size, [&](int rank) -> std::string {
    Env env = job.env(rank, size);
    auto rt = Runtime::init(lookup_in(env));
    if (!rt.is_ok()) return "init: " + rt.status().to_string();
    return process_sets_async_ops_and_shutdown(*rt.value(), timeline);
  });
  for (const auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());
  std::ifstream in(timeline);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("ALLREDUCE") != std::string::npos);
  std::filesystem::remove_all(dir);
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
