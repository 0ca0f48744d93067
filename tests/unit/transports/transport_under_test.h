// What the transport tests share: a Catch2 generator over every CPU
// transport in the registry (call it inside a TEST_CASE), and the check that
// no rank reported a problem.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rank_threads.h"
#include "transports/registry.h"

namespace hvd::transports::testing {

inline std::string transport_under_test() {
  auto names = TransportRegistry::with_builtins().names(DeviceKind::kCpu);
  return GENERATE_COPY(from_range(names));
}

inline void require_no_problems(const std::vector<Problems>& problems) {
  std::string text = describe(problems);
  INFO(text);
  REQUIRE(text.empty());
}

}  // namespace hvd::transports::testing
