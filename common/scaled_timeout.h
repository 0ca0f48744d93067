// Waits that grow with the number of ranks a host starts. The ranks of one
// host start one after another (its agent forks them, each loads its
// libraries and joins), and on a loaded host every start costs CPU time:
// 256 C workers took 10 s to start on 2 cores, 1024 more than a minute. A
// wait for every rank of a host (the shm transport's attach, the first
// round) is the configured timeout plus kStartCostPerRank per rank: 30 s at
// 1 rank, 36.4 s at 64, 132.4 s at 1024 (docs/configuration.md, "Timeouts
// that scale with the job").
#pragma once

#include <algorithm>
#include <chrono>

namespace hvd::common {

inline constexpr std::chrono::milliseconds kStartCostPerRank{100};

// `timeout` plus kStartCostPerRank per rank of the `ranks` a host starts.
constexpr std::chrono::milliseconds
scaled_timeout(std::chrono::milliseconds timeout, int ranks) {
  return timeout + kStartCostPerRank * std::max(ranks, 0);
}

} // namespace hvd::common
