// What the transport tests share: a Catch2 generator over every CPU
// transport in the registry (call it inside a TEST_CASE), the world sizes to
// run each at, and the check that no rank reported a problem.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rank_threads.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::transports::testing {

inline std::string transport_under_test() {
  auto names = builtin_registry().names(DeviceKind::kCpu);
  return GENERATE_COPY(from_range(names));
}

// The world sizes a conformance case runs at: 1 to 4 on every transport;
// on shm also 8 (threads are cheap there, and it must keep going when ranks
// outnumber the cores).
inline std::vector<int> world_sizes(const std::string& transport) {
  if (transport == "shm") return {1, 2, 3, 4, 8};
  return {1, 2, 3, 4};
}

inline void require_no_problems(const std::vector<Problems>& problems) {
  std::string text = describe(problems);
  INFO(text);
  REQUIRE(text.empty());
}

}  // namespace hvd::transports::testing
