// shm's cross-memory attach (transports/shm/cross_memory.h), ranks as
// processes: every rank agrees on the probe's verdict; when the probe fails
// on one rank, or HVD_SHM_CROSS_MEMORY=0, every rank stages; a peer killed
// before a large alltoallv is named as with staging.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "exchange_checks.h"
#include "forked_ranks.h"
#include "transport_under_test.h"
#include "transports/shm/shm_transport.h"

namespace hvd::transports {
namespace {

using common::StatusCode;
using shm::CrossMemory;
using shm::ShmTransport;
using testing::ForkedOptions;
using testing::Problems;
using testing::run_forked;

// An alltoallv of `large` bytes to every other rank and 1000 to itself,
// checked exactly.
void check_alltoallv(Transport& t, int64_t large, Problems& p) {
  testing::check_alltoallv(
      t.rank(), t, [large](int src, int dst) -> int64_t { return src == dst ? 1000 : large; }, p);
}

const CrossMemory& cross_memory_of(std::unique_ptr<Transport>& t) {
  return dynamic_cast<ShmTransport&>(*t).cross_memory();
}

// Runs 3 ranks; each expects CMA `on` (or, with `on` unset, whatever rank 0
// says, as long as all agree) and checks that large alltoallvs read peers
// directly exactly when it is on.
void run_expecting(std::optional<bool> on) {
  ForkedOptions options;
  options.size = 3;
  auto run = run_forked(options, [&](int, std::unique_ptr<Transport>& t, Problems& p) {
    const CrossMemory& cross = cross_memory_of(t);
    bool expected = on.value_or(cross.enabled());
    if (cross.enabled() != expected) {
      p.push_back(std::string("cross-memory attach is ") + (cross.enabled() ? "on" : "off") + ": " + cross.why());
    }
    if (!cross.enabled() && cross.why().empty()) p.push_back("off without a reason");
    check_alltoallv(*t, 100, p);        // staged on either path
    check_alltoallv(*t, 3 << 20, p);    // crosses by CMA when on
    bool read = cross.bytes_read() >= (uint64_t{3} << 20) * 2;
    if (read != cross.enabled()) {
      p.push_back("read " + std::to_string(cross.bytes_read()) + " bytes by CMA, on: " +
                  std::to_string(cross.enabled()));
    }
  });
  testing::require_no_problems(run.problems);
}

}  // namespace

TEST_CASE("shm: every rank agrees on cross-memory attach; large alltoallv reads peers directly", "[shm]") {
  run_expecting(std::nullopt);
}

TEST_CASE("shm: a probe refused on one rank keeps every rank on the staging path", "[shm]") {
  CrossMemory::refuse_probe_for_testing(1);
  run_expecting(false);
  CrossMemory::refuse_probe_for_testing(-1);
}

TEST_CASE("shm: HVD_SHM_CROSS_MEMORY=0 keeps every rank on the staging path", "[shm]") {
  setenv("HVD_SHM_CROSS_MEMORY", "0", 1);
  run_expecting(false);
  unsetenv("HVD_SHM_CROSS_MEMORY");
}

TEST_CASE("shm: a peer killed before a large alltoallv fails the others, naming it", "[shm]") {
  ForkedOptions options;
  options.size = 3;
  options.timeout = std::chrono::milliseconds(20000);
  auto run = run_forked(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    check_alltoallv(*t, 1 << 20, p);
    if (rank == 2) raise(SIGKILL);
    std::vector<int64_t> counts(3, 1 << 20);
    std::vector<uint8_t> in(3 << 20), out(3 << 20);
    Status s = t->alltoallv({in.data(), in.size()}, counts, {out.data(), out.size()}, counts);
    // Directly ("rank 2 (pid N) died") or through a peer that saw it first
    // ("rank 1 left: it lost rank 2").
    if (s.code() != StatusCode::kUnavailable || s.message().find("rank 2") == std::string::npos ||
        s.message().find("alltoallv") == std::string::npos) {
      p.push_back("expected Unavailable naming rank 2, got " + s.to_string());
    }
  });
  CHECK(run.signals[2] == SIGKILL);
  run.problems[2].clear();
  testing::require_no_problems(run.problems);
}

}  // namespace hvd::transports
