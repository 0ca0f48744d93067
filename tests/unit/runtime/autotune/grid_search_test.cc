// The search alone (grid_search.h), on synthetic noisy score functions.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "runtime/autotune/grid_search.h"

namespace hvd::runtime::autotune {
namespace {

// Three dimensions of 7 values each (indices 0..6), starting in the middle.
std::vector<Dimension> grid() {
  std::vector<Dimension> dims;
  for (const char* name : {"a", "b", "c"}) {
    dims.push_back(Dimension{name, {1, 2, 4, 8, 16, 32, 64}, 3});
  }
  return dims;
}

using Score = std::function<double(const Point&)>;

// A unimodal score peaked at `best` (each step away costs `slope`), with a
// mild interaction between the first two dimensions.
Score peak(Point best, double slope) {
  return [best, slope](const Point& p) {
    double distance = 0;
    for (size_t d = 0; d < p.size(); ++d) {
      distance += std::abs(static_cast<double>(p[d]) - static_cast<double>(best[d]));
    }
    double twist = 0.01 * std::abs((static_cast<double>(p[0]) - static_cast<double>(best[0])) *
                                   (static_cast<double>(p[1]) - static_cast<double>(best[1])));
    return 1e9 * std::exp(-slope * distance - twist);
  };
}

// Runs the search to the end, each sample the score times uniform noise of
// +-`noise`; `drift` multiplies every score by (1 + drift)^sample.
GridSearch run(const Score& score, SearchOptions options, double noise, unsigned seed,
               double drift = 0) {
  GridSearch search(grid(), options);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  int guard = 0;
  while (!search.done()) {
    REQUIRE(++guard <= options.max_samples);  // never past the budget
    double s = score(search.current()) * jitter(rng) * std::pow(1 + drift, search.samples());
    search.add_sample(s);
  }
  CHECK(search.samples() <= options.max_samples);
  return search;
}

TEST_CASE("the search converges to the best point of a noisy synthetic score") {
  const unsigned seed = GENERATE(range(1u, 21u));
  INFO("seed " << seed);
  const Point best = {1, 5, 2};  // a, b, c: away from the start {3, 3, 3} on every axis
  SearchOptions options;
  options.max_samples = 80;
  GridSearch search = run(peak(best, 0.25), options, 0.02, seed);
  CHECK(search.current() == best);
  CHECK_FALSE(search.kept_defaults());
  CHECK(search.gain() > search.noise());
  CHECK(search.confirmed());
}

TEST_CASE("the defaults stay when nothing beats them by more than the noise") {
  const unsigned seed = GENERATE(range(1u, 21u));
  INFO("seed " << seed);
  SearchOptions options;
  SECTION("a flat score: every difference is noise") {
    GridSearch search = run([](const Point&) { return 5e8; }, options, 0.04, seed);
    CHECK(search.kept_defaults());
    CHECK(search.current() == Point{3, 3, 3});
    // The noise it had to beat is what it measured (at least the floor).
    CHECK(search.noise() >= options.min_noise);
  }
  SECTION("the defaults are the best point") {
    GridSearch search = run(peak({3, 3, 3}, 0.3), options, 0.02, seed);
    CHECK(search.kept_defaults());
    CHECK(search.best_candidate() == Point{3, 3, 3});
  }
  SECTION("a candidate better by less than the noise floor") {
    options.min_noise = 0.10;
    GridSearch search = run(peak({4, 3, 3}, 0.05), options, 0.0, seed);
    CHECK(search.kept_defaults());
  }
}

TEST_CASE("a machine getting faster during the search does not make a candidate win") {
  // Flat score, but each sample 1.5% faster than the one before: during the
  // descent every later candidate looks better; the interleaved confirmation
  // sees the drift on both sides and keeps the defaults.
  const unsigned seed = GENERATE(range(1u, 11u));
  INFO("seed " << seed);
  SearchOptions options;
  GridSearch search = run([](const Point&) { return 5e8; }, options, 0.0, seed, 0.015);
  CHECK(search.kept_defaults());
  CHECK(search.confirmed());
}

TEST_CASE("the number of samples is bounded, whatever the scores") {
  const int max_samples = GENERATE(1, 2, 5, 9, 12, 20, 60);
  const unsigned seed = GENERATE(range(1u, 6u));
  INFO("max_samples " << max_samples << " seed " << seed);
  SearchOptions options;
  options.max_samples = max_samples;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> any(1e6, 1e9);
  GridSearch search(grid(), options);
  while (!search.done()) {
    REQUIRE(search.samples() < max_samples);
    search.add_sample(any(rng));
  }
  CHECK(search.samples() <= max_samples);
  // A candidate is chosen only after it was measured against the defaults again.
  if (!search.kept_defaults()) CHECK(search.confirmed());
}

TEST_CASE("a budget too small for a confirmation keeps the defaults") {
  SearchOptions options;
  options.max_samples = 9;  // after the baseline (3), no room for a trial (3) and its confirmation (6)
  GridSearch search = run(peak({6, 3, 3}, 0.5), options, 0.0, 1);
  CHECK(search.kept_defaults());
  CHECK(search.budget_exhausted());
}

TEST_CASE("median and spread") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 2, 3}) == 2.5);
  CHECK(relative_spread({9, 10, 11}) == Approx(0.2));
  CHECK(relative_spread({5}) == 0);
  CHECK_THROWS_AS(median({}), std::logic_error);
}

TEST_CASE("bad search options and grids are refused") {
  SearchOptions options;
  options.repeats = 0;
  CHECK_THROWS_AS(GridSearch(grid(), options), std::invalid_argument);
  options = SearchOptions{};
  options.max_samples = 0;
  CHECK_THROWS_AS(GridSearch(grid(), options), std::invalid_argument);
  CHECK_THROWS_AS(GridSearch({Dimension{"x", {2, 1}, 0}}, SearchOptions{}), std::invalid_argument);
  CHECK_THROWS_AS(GridSearch({Dimension{"x", {1, 2}, 2}}, SearchOptions{}), std::invalid_argument);
  CHECK_THROWS_AS(GridSearch({Dimension{"x", {}, 0}}, SearchOptions{}), std::invalid_argument);
}

}  // namespace
}  // namespace hvd::runtime::autotune
