// Runs one function per rank on its own thread, each rank with its own
// transport over one in-process key-value store, the way the runtime does
// across processes. Catch2 assertions are not thread-safe, so rank bodies
// report problems as text and the test thread checks them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/store.h"
#include "transports/registry.h"

namespace hvd::transports::testing {

// Problems a rank found, one line each; empty when all went well.
using Problems = std::vector<std::string>;

struct RankOptions {
  std::string transport = "gloo";
  int size = 1;
  std::chrono::milliseconds timeout{10000};  // the transports' own timeout
  std::chrono::seconds deadline{60};         // for each rank's thread to finish
  // Each rank's host name (TransportContext::host); unset: "" for every rank.
  std::function<std::string(int)> host;
};

// body(rank, transport, problems). A rank whose transport cannot be created
// reports that as its problem. When a thread misses the deadline the test
// cannot continue safely (the thread still uses the stack): the process
// prints which rank hung and exits with status 1 rather than hanging.
std::vector<Problems> run_ranks(const RankOptions& options,
                                const std::function<void(int, std::unique_ptr<Transport>&, Problems&)>& body);

// "rank 2: <problem>" lines of every rank, for INFO/FAIL messages.
std::string describe(const std::vector<Problems>& problems);

}  // namespace hvd::transports::testing
