// Runs one function per rank in its own forked process, each rank with its
// own transport over a FileStore in a fresh directory: for what threads
// cannot show (a rank killed with SIGKILL or stopped with SIGSTOP, what is
// left in /dev/shm). Rank bodies report problems as text, as in
// rank_threads.h; the parent collects them and each rank's fate.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rank_threads.h"
#include "transports/registry.h"

namespace hvd::transports::testing {

struct ForkedOptions {
  std::string transport = "shm";
  int size = 2;
  std::chrono::milliseconds timeout{10000};  // the transports' own timeout
  std::chrono::seconds deadline{30};         // for the ranks still running once one has finished
  std::string key_prefix;                    // set by run_forked when empty
};

struct ForkedRun {
  std::vector<Problems> problems;  // per rank; "killed by signal N" when a body never returned
  std::vector<int> signals;        // per rank: the signal that ended it, 0 if it exited
};

// body(rank, transport, problems) runs in the child; the child exits after
// it. Ranks that have not finished when every other rank has and `deadline`
// has passed since (a rank that stopped itself, say) are killed with SIGKILL.
ForkedRun run_forked(const ForkedOptions& options,
                     const std::function<void(int, std::unique_ptr<Transport>&, Problems&)>& body);

// Names in /dev/shm that start with "hvd-" + `fragment`.
std::vector<std::string> shm_files(const std::string& fragment);

}  // namespace hvd::transports::testing
