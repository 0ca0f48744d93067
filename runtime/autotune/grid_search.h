// The search of autotune (docs/autotune.md, "Algorithm"): coordinate descent
// over log-spaced grids, several samples per point scored by their median,
// started from the defaults, with a bounded number of samples. Pure logic:
// the caller measures a sample of current() and hands its score over with
// add_sample(); nothing here knows what the dimensions mean.
//
//  1. Baseline: `repeats` samples of the defaults. Their spread (max - min
//     over median) is the measured noise, never below `min_noise`.
//  2. Descent: for each dimension in turn, probe the grid values just above
//     and just below the incumbent; if the better probe beats the incumbent
//     by more than the noise, move there and keep stepping that way while
//     each step beats the incumbent by more than the noise. (Both probes,
//     so that one lucky sample on one side cannot hide the other side.)
//     A point is sampled at most once (its median is remembered). After a
//     pass over every dimension, another pass if something moved (at most
//     `max_passes`).
//  3. Confirmation, when the incumbent is not the defaults: `repeats`
//     samples of the defaults and of the incumbent, interleaved (so a drift
//     of the machine's speed hits both alike). The incumbent wins only if its
//     median beats the defaults' median by more than the noise (now also
//     the spread of these samples of the defaults); else the defaults stay.
// Every phase stops early rather than exceed `max_samples` samples in all:
// the descent ends when a candidate and the confirmation would not fit.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace hvd::runtime::autotune {

struct Dimension {
  std::string name;
  std::vector<double> values;  // ascending, distinct
  size_t start = 0;            // index of the default value
};

struct SearchOptions {
  int repeats = 3;          // samples per point
  int max_samples = 60;     // samples in all, baseline and confirmation included
  double min_noise = 0.02;  // the noise is never taken below this (relative)
  int max_passes = 2;       // passes of the descent over every dimension
};

using Point = std::vector<size_t>;  // an index into each dimension's values

class GridSearch {
 public:
  enum class Phase { kBaseline, kDescent, kConfirm, kDone };

  GridSearch(std::vector<Dimension> dims, SearchOptions options);

  // The point to sample next; once done(), the chosen one.
  const Point& current() const { return current_; }
  // A sample's score (higher is better) measured at current().
  void add_sample(double score);

  Phase phase() const { return phase_; }
  bool done() const { return phase_ == Phase::kDone; }
  int samples() const { return samples_; }
  const std::vector<Dimension>& dimensions() const { return dims_; }
  const Point& defaults() const { return defaults_; }

  // After done(): whether the defaults were kept, the relative gain of the
  // chosen point over the defaults (confirmation medians; 0 when kept without
  // a confirmation), the noise it had to beat, and the best candidate tried
  // (the defaults when none was better during the descent).
  bool kept_defaults() const { return current_ == defaults_; }
  double gain() const { return gain_; }
  double noise() const { return noise_; }
  const Point& best_candidate() const { return incumbent_; }
  bool budget_exhausted() const { return budget_exhausted_; }
  // Whether the best candidate was measured against the defaults again.
  bool confirmed() const { return !confirm_best_.empty(); }

 private:
  // Picks the next candidate of the descent (or moves on to the
  // confirmation) once the incumbent or a step was decided.
  void advance();
  void start_confirm();
  void finish(const Point& chosen);
  // A step from the incumbent along the current dimension and direction;
  // false when it leaves the grid.
  bool step(Point& out) const;
  void judge(double score);  // the median of a candidate, against the incumbent
  bool fits(int more) const { return samples_ + more <= options_.max_samples; }

  std::vector<Dimension> dims_;
  SearchOptions options_;
  Phase phase_ = Phase::kBaseline;
  Point defaults_;
  Point current_;
  std::vector<double> pending_;  // samples of current_ so far
  int samples_ = 0;
  double noise_ = 0;
  double gain_ = 0;
  bool budget_exhausted_ = false;

  // Descent.
  std::map<Point, double> scored_;  // median per point sampled
  Point incumbent_;
  double incumbent_score_ = 0;
  size_t dim_ = 0;
  int direction_ = +1;             // the probe up, or the way it moves
  bool moved_this_dim_ = false;
  Point up_point_;                 // the probe up and its median (-1: off the grid)
  double up_score_ = -1;
  bool moved_this_pass_ = false;
  int pass_ = 1;

  // Confirmation: interleaved samples of the defaults and the incumbent.
  std::vector<double> confirm_defaults_;
  std::vector<double> confirm_best_;
  std::vector<double> baseline_;
};

// The median of `values` (not empty).
double median(std::vector<double> values);
// (max - min) / median of `values`; 0 for fewer than two or a median <= 0.
double relative_spread(const std::vector<double>& values);

}  // namespace hvd::runtime::autotune
