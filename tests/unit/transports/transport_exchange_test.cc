// The conformance suite's exchanges: alltoallv of uneven counts, some zero,
// and alltoallv and allgatherv whose counts straddle shm's cross-memory
// threshold; over every CPU transport at every world size, ranks as threads
// (as in transport_conformance_test.cc).
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "exchange_checks.h"
#include "rank_threads.h"
#include "transport_under_test.h"

namespace hvd::transports {
namespace {

using testing::Bytes;
using testing::byte;
using testing::check_alltoallv;
using testing::Problems;
using testing::RankOptions;
using testing::run_ranks;
using testing::require_no_problems;
using testing::transport_under_test;
using testing::world_sizes;

// An allgatherv where rank r gives bytes(r, r + 1) of byte(r, 0, k).
void check_allgatherv(int rank, Transport& t, Bytes bytes, Problems& p) {
  int size = t.size();
  std::vector<int64_t> counts(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) counts[static_cast<size_t>(r)] = bytes(r, r + 1);
  std::vector<uint8_t> mine(static_cast<size_t>(counts[static_cast<size_t>(rank)]));
  for (size_t k = 0; k < mine.size(); ++k) mine[k] = byte(rank, 0, static_cast<int64_t>(k));
  std::vector<uint8_t> all(static_cast<size_t>(std::accumulate(counts.begin(), counts.end(), int64_t{0})));
  Status s = t.allgatherv({mine.data(), mine.size()}, {all.data(), all.size()}, counts);
  if (!s.is_ok()) {
    p.push_back("allgatherv: " + s.to_string());
    return;
  }
  size_t offset = 0;
  for (int src = 0; src < size; ++src) {
    for (int64_t k = 0; k < counts[static_cast<size_t>(src)]; ++k) {
      if (all[offset + static_cast<size_t>(k)] != byte(src, 0, k)) {
        p.push_back("allgatherv: byte " + std::to_string(k) + " from rank " + std::to_string(src));
        return;
      }
    }
    offset += static_cast<size_t>(counts[static_cast<size_t>(src)]);
  }
}

// Every CPU transport at every world size (Catch2 generators: call it in a
// TEST_CASE).
RankOptions every_transport_and_size() {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = GENERATE_COPY(from_range(world_sizes(options.transport)));
  return options;
}

}  // namespace

TEST_CASE("alltoallv: uneven counts, some zero", "[transport]") {
  RankOptions options = every_transport_and_size();
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    check_alltoallv(rank, *t, [](int src, int dst) -> int64_t { return (src + 2 * dst) % 5 * 100; }, p);
  }));
}

// Counts from zero to past shm's cross-memory threshold (256 KiB), uneven,
// so that large alltoallv sends cross by CMA where a transport has it and
// the rest take the staging rounds in the same call; twice, back to back
// (allgatherv, staged on shm, at the same counts).
TEST_CASE("alltoallv and allgatherv: large uneven counts", "[transport]") {
  RankOptions options = every_transport_and_size();
  CAPTURE(options.transport, options.size);
  require_no_problems(run_ranks(options, [](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    Bytes bytes = [](int src, int dst) -> int64_t { return (src + 2 * dst) % 4 * (150 << 10) + src * 7; };
    check_alltoallv(rank, *t, bytes, p);
    check_alltoallv(rank, *t, bytes, p);
    check_allgatherv(rank, *t, bytes, p);
    check_allgatherv(rank, *t, bytes, p);
  }));
}

}  // namespace hvd::transports
