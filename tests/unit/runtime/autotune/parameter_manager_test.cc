// The parameter manager (windows, warm-up, log) over the real search space,
// with a synthetic workload whose throughput depends on the parameters.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/autotune/parameter_manager.h"

namespace hvd::runtime::autotune {
namespace {

constexpr int64_t kMiB = 1 << 20;

TuneParams defaults() { return TuneParams{64 * kMiB, 1.0, 1 * kMiB}; }

// Bytes per second of a synthetic workload: best at 16 MiB, 4 ms, 256 KiB.
double throughput(const TuneParams& p) {
  auto off = [](double value, double best) { return std::abs(std::log2(value / best)); };
  double distance = off(static_cast<double>(p.fusion_threshold), 16.0 * kMiB) / 2 +
                    off(p.cycle_time_ms, 4.0) / 2 +
                    off(static_cast<double>(p.chunk_bytes), 256.0 * 1024);
  return 2e9 * std::exp(-0.2 * distance);
}

// A manager logging into a string (text()).
struct Logged {
  explicit Logged(const TunerOptions& options) {
    auto stream = std::make_unique<std::ostringstream>();
    out = stream.get();
    manager = std::make_unique<ParameterManager>(defaults(), 1 * kMiB, options,
                                                 std::make_unique<TuneLog>(std::move(stream)));
  }
  std::string text() const { return out->str(); }
  std::ostringstream* out;
  std::unique_ptr<ParameterManager> manager;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_CASE("the manager settles on the best parameters of a synthetic workload and logs it") {
  const unsigned seed = GENERATE(range(1u, 11u));
  INFO("seed " << seed);
  TunerOptions options;
  options.warmup_samples = 2;
  options.steps_per_sample = 5;
  options.min_sample_seconds = 0;
  options.search.max_samples = 80;
  Logged logged(options);
  ParameterManager& manager = *logged.manager;
  CHECK(manager.current() == defaults());  // the baseline first
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(0.97, 1.03);  // per cycle
  int changes = 0;
  int cycles = 0;
  while (!manager.settled()) {
    REQUIRE(++cycles <= 5 * (2 + 80));
    const int64_t bytes = 8 * kMiB;
    double seconds = static_cast<double>(bytes) / (throughput(manager.current()) * jitter(rng));
    if (manager.record(bytes, seconds)) ++changes;
    CHECK_FALSE(manager.record(0, 1.0));  // a cycle that moved nothing is not a step
  }
  CHECK(manager.current() == TuneParams{16 * kMiB, 4.0, 256 * 1024});
  CHECK(changes > 0);
  CHECK(manager.samples() <= 2 + 80);
  CHECK_FALSE(manager.record(1, 1.0));  // settled: nothing changes any more

  auto log = lines(logged.text());
  REQUIRE(log.size() == static_cast<size_t>(manager.samples()) + 2);
  CHECK(log.front() == "sample,phase,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_s");
  CHECK(log[1].rfind("1,warmup,67108864,1,1048576,", 0) == 0);
  CHECK(log[3].rfind("3,baseline,67108864,1,1048576,", 0) == 0);
  CHECK(logged.text().find(",trial,") != std::string::npos);
  CHECK(logged.text().find(",confirm,") != std::string::npos);
  CHECK(log.back() == "# settled: " + manager.verdict());
  CHECK_THAT(manager.verdict(),
             Catch::StartsWith("fusion_threshold=16777216 cycle_time_ms=4 chunk_bytes=262144 after ") &&
                 Catch::Contains("beat the defaults by"));
}

TEST_CASE("the manager keeps the defaults of a workload the parameters do not change") {
  TunerOptions options;
  options.warmup_samples = 0;
  options.steps_per_sample = 3;
  options.min_sample_seconds = 0;
  Logged logged(options);
  ParameterManager& manager = *logged.manager;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  for (int i = 0; i < 3 * 61 && !manager.settled(); ++i) manager.record(1000, 1e-6 * jitter(rng));
  REQUIRE(manager.settled());
  CHECK(manager.current() == defaults());
  CHECK_THAT(manager.verdict(), Catch::Contains("defaults kept"));
  CHECK_THAT(logged.text(), Catch::Contains("# settled: fusion_threshold=67108864 cycle_time_ms=1 "
                                          "chunk_bytes=1048576 after"));
}

TEST_CASE("a sample needs its steps and its busy time") {
  TunerOptions options;
  options.warmup_samples = 0;
  options.steps_per_sample = 4;
  options.min_sample_seconds = 0.05;
  options.search.repeats = 1;
  ParameterManager manager(defaults(), 0, options, nullptr);
  CHECK(manager.current().chunk_bytes == 0);  // no chunk to tune without a transport that has one
  for (int i = 0; i < 4; ++i) manager.record(100, 0.001);  // 4 steps, 4 ms: not yet
  CHECK(manager.samples() == 0);
  for (int i = 0; i < 45; ++i) manager.record(100, 0.001);  // 49 ms
  CHECK(manager.samples() == 0);
  manager.record(100, 0.001);
  CHECK(manager.samples() == 1);
}

TEST_CASE("the search space holds every default, on the grid or not") {
  auto dims = search_space(TuneParams{10 * kMiB, 3.0, 1 * kMiB}, 1 * kMiB);
  REQUIRE(dims.size() == 3);
  CHECK(dims[0].values == std::vector<double>{1.0 * kMiB, 4.0 * kMiB, 10.0 * kMiB, 16.0 * kMiB,
                                              64.0 * kMiB, 256.0 * kMiB});
  CHECK(dims[0].start == 2);
  CHECK(dims[1].values == std::vector<double>{0.25, 1, 3, 4, 16});
  CHECK(dims[2].values.back() == 1.0 * kMiB);
  CHECK(dims[2].values.front() == 64.0 * 1024);
  CHECK(params_at(dims, {2, 2, 4}) == TuneParams{10 * kMiB, 3.0, 1 * kMiB});
  CHECK(search_space(TuneParams{0, 1.0, 0}, 0).size() == 2);  // fusion off is a value too
  CHECK(search_space(TuneParams{0, 1.0, 0}, 0)[0].values.front() == 0);
}

TEST_CASE("a log file that cannot be written is refused, naming it") {
  auto log = TuneLog::open("/nonexistent/dir/at.csv");
  REQUIRE_FALSE(log.is_ok());
  CHECK_THAT(log.status().message(), Catch::Contains("'/nonexistent/dir/at.csv'"));
}

}  // namespace
}  // namespace hvd::runtime::autotune
