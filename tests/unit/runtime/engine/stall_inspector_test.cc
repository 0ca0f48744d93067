#include "runtime/engine/stall_inspector.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace hvd::runtime::engine {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kPrefix =
    "One or more tensors were submitted by a subset of ranks and are waiting for the rest for "
    "more than 60 seconds. This may indicate that different ranks are trying to submit "
    "different tensors or that only a subset of ranks is submitting tensors, which will cause "
    "deadlock.\nMissing ranks:\n";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Fixture {
  Clock::time_point base = Clock::now();
  // grad_w first seen at base (rank 1 missing), grad_b at base + 5 s (ranks 1, 3).
  std::vector<PendingTensor> pending{{"grad_w", base, {1}, {0}}, {"grad_b", base + 5s, {1, 3}, {0, 2}}};
};

TEST_CASE("stall inspector: nothing before the check time", "[stall]") {
  Fixture f;
  StallInspector inspector(60s, 0s);
  auto r = inspector.check(f.pending, f.base + 59s);
  CHECK(r.warning.empty());
  CHECK(r.expired.empty());
  CHECK(inspector.check({}, f.base + 1h).warning.empty());
  // A tensor first seen "after now" has waited nothing.
  CHECK(inspector.check({{"future", f.base + 2h, {0}, {1}}}, f.base + 1h).warning.empty());
}

TEST_CASE("stall inspector: the warning names tensors, waits and missing ranks", "[stall]") {
  Fixture f;
  StallInspector inspector(60s, 0s);
  SECTION("both stalled") {
    auto r = inspector.check(f.pending, f.base + 65s);
    CHECK(r.expired.empty());
    CHECK(r.warning ==
          kPrefix +
              "1: [grad_w, grad_b]\n"
              "3: [grad_b]\n"
              "Stalled tensors:\n"
              "grad_w: waiting 65 s for ranks [1]\n"
              "grad_b: waiting 60 s for ranks [1, 3]");
  }
  SECTION("only the older one stalled") {
    auto r = inspector.check(f.pending, f.base + 64s);
    CHECK(r.warning.rfind(kPrefix, 0) == 0);
    CHECK(contains(r.warning, "\n1: [grad_w]\nStalled tensors:\ngrad_w: waiting 64 s"));
    CHECK(!contains(r.warning, "grad_b"));
    CHECK(!contains(r.warning, "\n3: "));
  }
}

TEST_CASE("stall inspector: at most one warning per check period", "[stall]") {
  Fixture f;
  StallInspector inspector(60s, 0s);
  // Nothing stalled yet: this check does not start a period.
  CHECK(inspector.check(f.pending, f.base + 30s).warning.empty());
  CHECK(!inspector.check(f.pending, f.base + 60s).warning.empty());
  CHECK(inspector.check(f.pending, f.base + 61s).warning.empty());
  CHECK(inspector.check(f.pending, f.base + 119s).warning.empty());
  const auto again = inspector.check(f.pending, f.base + 120s);
  CHECK(again.warning.rfind(kPrefix, 0) == 0);
  CHECK(contains(again.warning, "grad_w: waiting 120 s for ranks [1]"));
  CHECK(inspector.check(f.pending, f.base + 150s).warning.empty());
  CHECK(!inspector.check(f.pending, f.base + 180s).warning.empty());
}

TEST_CASE("stall inspector: check time 0 disables warnings", "[stall]") {
  Fixture f;
  StallInspector inspector(0s, 0s);
  for (auto t : {1s, 60s, 3600s, 360000s}) {
    auto r = inspector.check(f.pending, f.base + t);
    CHECK(r.warning.empty());
    CHECK(r.expired.empty());
  }
}

TEST_CASE("stall inspector: expired tensors past the shutdown time, when enabled", "[stall]") {
  Fixture f;
  SECTION("disabled") {
    StallInspector inspector(60s, 0s);
    CHECK(inspector.check(f.pending, f.base + 100h).expired.empty());
  }
  SECTION("enabled, in input order, every check") {
    StallInspector inspector(60s, 120s);
    CHECK(inspector.check(f.pending, f.base + 119s).expired.empty());
    CHECK(inspector.check(f.pending, f.base + 120s).expired == std::vector<std::string>{"grad_w"});
    CHECK(inspector.check(f.pending, f.base + 125s).expired ==
          (std::vector<std::string>{"grad_w", "grad_b"}));
    std::vector<PendingTensor> reversed{f.pending[1], f.pending[0]};
    CHECK(inspector.check(reversed, f.base + 200s).expired ==
          (std::vector<std::string>{"grad_b", "grad_w"}));
  }
  SECTION("independent of warnings") {
    StallInspector inspector(0s, 10s);
    auto r = inspector.check(f.pending, f.base + 10s);
    CHECK(r.warning.empty());
    CHECK(r.expired == std::vector<std::string>{"grad_w"});
  }
  SECTION("the warning says when stalled tensors fail") {
    StallInspector inspector(60s, 120s);
    auto r = inspector.check(f.pending, f.base + 60s);
    CHECK(r.expired.empty());
    CHECK(contains(r.warning, "\nStalled tensors fail after 120 seconds."));
  }
}

}  // namespace
}  // namespace hvd::runtime::engine
