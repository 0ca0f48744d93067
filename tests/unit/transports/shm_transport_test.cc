// What only the shm transport has: its refusal of worlds spread over hosts,
// and ranks as real processes: a peer killed with SIGKILL or stopped with
// SIGSTOP, ranks outnumbering cores, and no segment left in /dev/shm. (The
// conformance and abort suites run on shm with ranks as threads.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "forked_ranks.h"
#include "transport_under_test.h"
#include "transports/shm/shm_transport.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {
namespace {

using Clock = std::chrono::steady_clock;
using common::StatusCode;
using testing::ForkedOptions;
using testing::Problems;
using testing::run_forked;
using testing::shm_files;

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// This process's forked worlds name their segments "hvd-forked-<pid>-...".
std::string our_segments() { return "forked-" + std::to_string(getpid()) + "-"; }

// float32 sum over `size` ranks of `n` elements (the large, chunked path
// when n * 4 > kOneShotBytes), checked exactly.
void check_sum(Transport& t, size_t n, Problems& p) {
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>((i % 1000) + static_cast<size_t>(t.rank()));
  Status s = t.allreduce({data.data(), n * 4}, DataType::kFloat32, ReduceOp::kSum);
  if (!s.is_ok()) {
    p.push_back("allreduce n=" + std::to_string(n) + ": " + s.to_string());
    return;
  }
  int size = t.size();
  for (size_t i = 0; i < n; ++i) {
    float expected = static_cast<float>((i % 1000) * static_cast<size_t>(size)) +
                     static_cast<float>(size * (size - 1) / 2);
    if (data[i] != expected) {
      p.push_back("allreduce n=" + std::to_string(n) + " element " + std::to_string(i) + " is " +
                  std::to_string(data[i]) + ", expected " + std::to_string(expected));
      return;
    }
  }
}

void require_no_problems(const std::vector<Problems>& problems) { testing::require_no_problems(problems); }

}  // namespace

TEST_CASE("shm: refuses a world whose ranks are not all on one host", "[shm]") {
  TransportContext context;
  context.size = 4;
  context.local_size = 2;
  daemon::KvStore store;
  context.store = &store;
  auto refused = builtin_registry().create("shm", context);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.status().message(), Catch::Contains("only 2 of the 4 ranks are on this host"));

  // Rank 1 published another host's identity: rank 0 sees it and refuses.
  context.size = 2;
  context.local_size = 0;
  context.key_prefix = "elsewhere/";
  context.timeout = std::chrono::milliseconds(2000);
  REQUIRE(store.set("elsewhere/shm/host/1", "another-boot\n1\n1:2\nhost-b").is_ok());
  refused = builtin_registry().create("shm", context);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.status().message(), Catch::Contains("but rank 1 is on host-b") &&
                                             Catch::Contains("needs every rank of the world on one host"));
  CHECK(store.check({"elsewhere/shm/segment"}).value() == false);  // nothing was created
}

TEST_CASE("shm: ranks in processes; the segment is gone from /dev/shm once all attached", "[shm]") {
  ForkedOptions options;
  options.size = 4;
  std::string ours = our_segments();
  auto run = run_forked(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    if (!shm_files(ours).empty()) p.push_back("a segment is still in /dev/shm: " + shm_files(ours)[0]);
    check_sum(*t, 5, p);
    check_sum(*t, 3 << 20, p);  // 12 MiB: twelve rounds
    std::vector<int64_t> counts(4);
    for (int r = 0; r < 4; ++r) counts[static_cast<size_t>(r)] = (r + 1) * 300000;
    std::vector<uint8_t> in(static_cast<size_t>(counts[static_cast<size_t>(rank)]), static_cast<uint8_t>(rank + 1));
    std::vector<uint8_t> out(static_cast<size_t>(std::accumulate(counts.begin(), counts.end(), int64_t{0})));
    Status s = t->allgatherv({in.data(), in.size()}, {out.data(), out.size()}, counts);
    if (!s.is_ok()) p.push_back("allgatherv: " + s.to_string());
    if (out.front() != 1 || out.back() != 4) p.push_back("allgatherv: wrong bytes at the ends");
    s = t->barrier();
    if (!s.is_ok()) p.push_back("barrier: " + s.to_string());
  });
  require_no_problems(run.problems);
  CHECK(shm_files(ours).empty());
}

TEST_CASE("shm: a peer killed with SIGKILL fails the others at once, naming it", "[shm]") {
  ForkedOptions options;
  options.size = 3;
  options.timeout = std::chrono::milliseconds(20000);
  auto run = run_forked(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    check_sum(*t, 1000, p);
    if (rank == 2) raise(SIGKILL);
    auto start = Clock::now();
    std::vector<float> data(1 << 20, 1.0f);
    Status s = t->allreduce({data.data(), data.size() * 4}, DataType::kFloat32, ReduceOp::kSum);
    long long waited = ms_since(start);
    if (s.code() != StatusCode::kUnavailable || s.message().find("rank 2 (pid") == std::string::npos ||
        s.message().find("died") == std::string::npos || s.message().find("allreduce") == std::string::npos) {
      p.push_back("expected Unavailable naming rank 2 that died, got " + s.to_string());
    }
    if (waited > 2000) p.push_back("the failure took " + std::to_string(waited) + " ms (timeout 20000)");
    Status again = t->barrier();
    if (again.message() != s.message()) p.push_back("a later call gave " + again.to_string());
  });
  CHECK(run.signals[2] == SIGKILL);
  run.problems[2].clear();  // its "killed by signal 9" is the point
  require_no_problems(run.problems);
  CHECK(shm_files(our_segments()).empty());
}

TEST_CASE("shm: a peer stopped with SIGSTOP fails the others within the timeout, naming it", "[shm]") {
  ForkedOptions options;
  options.size = 3;
  options.timeout = std::chrono::milliseconds(1000);
  options.deadline = std::chrono::seconds(1);
  auto run = run_forked(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    check_sum(*t, 1000, p);
    if (rank == 2) raise(SIGSTOP);  // the parent kills it once the others are done
    auto start = Clock::now();
    std::vector<float> data(100000, 1.0f);
    Status s = t->allreduce({data.data(), data.size() * 4}, DataType::kFloat32, ReduceOp::kSum);
    long long waited = ms_since(start);
    if (rank == 2) return;
    // A rank that sees a peer give up first names rank 2 through it.
    if (s.is_ok() || s.message().find("rank 2") == std::string::npos) {
      p.push_back("expected a failure naming rank 2, got " + s.to_string());
    }
    if (s.code() == StatusCode::kTimeout && s.message().find("rank 2 (pid") != std::string::npos &&
        s.message().find("stopped") == std::string::npos) {
      p.push_back("the timeout does not say rank 2 is stopped: " + s.to_string());
    }
    if (waited > 3000) p.push_back("the failure took " + std::to_string(waited) + " ms (timeout 1000)");
  });
  CHECK(run.signals[2] == SIGKILL);
  run.problems[2].clear();
  require_no_problems(run.problems);
  CHECK(shm_files(our_segments()).empty());
}

TEST_CASE("shm: eight processes on few cores keep going", "[shm]") {
  ForkedOptions options;
  options.size = 8;
  auto start = Clock::now();
  auto run = run_forked(options, [](int, std::unique_ptr<Transport>& t, Problems& p) {
    for (int i = 0; i < 200; ++i) check_sum(*t, 64, p);
    for (int i = 0; i < 10; ++i) check_sum(*t, 1 << 20, p);
  });
  require_no_problems(run.problems);
  WARN("8 ranks: 200 small and 10 4 MiB allreduces took " << ms_since(start) << " ms");
  CHECK(ms_since(start) < 30000);
}

}  // namespace hvd::transports

namespace hvd::transports {

TEST_CASE("shm: the chunk is a tunable; every chunked op stays exact at any chunk", "[shm]") {
  ForkedOptions options;
  options.size = 3;
  auto run = run_forked(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    std::vector<Tunable> knobs = t->tunables();
    if (knobs.size() != 1 || knobs[0].name != "chunk_bytes" ||
        knobs[0].value != static_cast<int64_t>(shm::kStagingBytes) ||
        knobs[0].min != static_cast<int64_t>(shm::kMinChunkBytes) ||
        knobs[0].max != static_cast<int64_t>(shm::kStagingBytes)) {
      p.push_back("unexpected tunables");
      return;
    }
    if (t->set_tunable("chunk_bytes", 1000).code() != StatusCode::kInvalidArgument ||
        t->set_tunable("chunk_bytes", int64_t{4} << 20).code() != StatusCode::kInvalidArgument ||
        t->set_tunable("threads", 2).code() != StatusCode::kNotFound) {
      p.push_back("bad tunables were not refused as expected");
    }
    for (int64_t chunk : {int64_t{64} << 10, int64_t{192} << 10, int64_t{1} << 20}) {
      Status set = t->set_tunable("chunk_bytes", chunk);
      if (!set.is_ok()) p.push_back("set_tunable: " + set.to_string());
      check_sum(*t, 700001, p);  // 2.7 MiB: many chunks, the last one partial
      std::vector<uint8_t> data(900000, rank == 1 ? uint8_t{7} : uint8_t{0});
      Status s = t->broadcast({data.data(), data.size()}, 1);
      if (!s.is_ok() || data.front() != 7 || data.back() != 7) p.push_back("broadcast at a chunk");
      std::vector<int64_t> counts = {400000, 0, 333333};
      std::vector<uint8_t> in(static_cast<size_t>(counts[static_cast<size_t>(rank)]),
                              static_cast<uint8_t>(rank + 1));
      std::vector<uint8_t> out(733333);
      s = t->allgatherv({in.data(), in.size()}, {out.data(), out.size()}, counts);
      if (!s.is_ok() || out[399999] != 1 || out[400000] != 3 || out.back() != 3) {
        p.push_back("allgatherv at chunk " + std::to_string(chunk));
      }
    }
  });
  require_no_problems(run.problems);
}

}  // namespace hvd::transports
