#include "runtime/autotune/grid_search.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace hvd::runtime::autotune {

double median(std::vector<double> values) {
  if (values.empty()) throw std::logic_error("median of no values");
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double relative_spread(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double m = median(values);
  if (m <= 0) return 0;
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return (*hi - *lo) / m;
}

GridSearch::GridSearch(std::vector<Dimension> dims, SearchOptions options)
    : dims_(std::move(dims)), options_(options) {
  if (options_.repeats < 1 || options_.max_samples < 1 || options_.max_passes < 1 ||
      !(options_.min_noise >= 0)) {
    throw std::invalid_argument("GridSearch: repeats, max_samples and max_passes must be > 0");
  }
  for (const Dimension& d : dims_) {
    if (d.values.empty() || d.start >= d.values.size() ||
        !std::is_sorted(d.values.begin(), d.values.end()) ||
        std::adjacent_find(d.values.begin(), d.values.end()) != d.values.end()) {
      throw std::invalid_argument("GridSearch: dimension '" + d.name +
                                  "' needs ascending distinct values and a start among them");
    }
    defaults_.push_back(d.start);
  }
  current_ = defaults_;
  incumbent_ = defaults_;
  noise_ = options_.min_noise;
}

void GridSearch::add_sample(double score) {
  if (done()) return;
  ++samples_;
  switch (phase_) {
    case Phase::kBaseline: {
      pending_.push_back(score);
      const int wanted = std::min(options_.repeats, options_.max_samples);
      if (static_cast<int>(pending_.size()) < wanted) return;
      baseline_ = std::move(pending_);
      pending_.clear();
      noise_ = std::max(options_.min_noise, relative_spread(baseline_));
      incumbent_score_ = median(baseline_);
      scored_[defaults_] = incumbent_score_;
      phase_ = Phase::kDescent;
      advance();
      return;
    }
    case Phase::kDescent: {
      pending_.push_back(score);
      if (static_cast<int>(pending_.size()) < options_.repeats) return;
      double m = median(pending_);
      pending_.clear();
      scored_[current_] = m;
      judge(m);
      advance();
      return;
    }
    case Phase::kConfirm: {
      const bool of_defaults = current_ == defaults_;
      (of_defaults ? confirm_defaults_ : confirm_best_).push_back(score);
      current_ = of_defaults ? incumbent_ : defaults_;
      if (static_cast<int>(confirm_best_.size()) < options_.repeats) return;
      double base = median(confirm_defaults_);
      double best = median(confirm_best_);
      noise_ = std::max({noise_, relative_spread(confirm_defaults_), relative_spread(confirm_best_)});
      gain_ = base > 0 ? best / base - 1 : 0;
      finish(best > base * (1 + noise_) ? incumbent_ : defaults_);
      return;
    }
    case Phase::kDone:
      return;
  }
}

bool GridSearch::step(Point& out) const {
  out = incumbent_;
  size_t& index = out[dim_];
  if (direction_ > 0) {
    if (index + 1 >= dims_[dim_].values.size()) return false;
    ++index;
  } else {
    if (index == 0) return false;
    --index;
  }
  return true;
}

void GridSearch::judge(double score) {
  if (!moved_this_dim_ && direction_ > 0) {  // the step up probed: the step down next
    up_point_ = current_;
    up_score_ = score;
    direction_ = -1;
    return;
  }
  if (!moved_this_dim_) {  // both probed: the better one, if it beats the incumbent
    const bool up = up_score_ > score;
    const double best = up ? up_score_ : score;
    if (best > incumbent_score_ * (1 + noise_)) {
      incumbent_ = up ? up_point_ : current_;
      incumbent_score_ = best;
      direction_ = up ? +1 : -1;
      moved_this_dim_ = true;
      moved_this_pass_ = true;
      return;  // keep going that way
    }
  } else if (score > incumbent_score_ * (1 + noise_)) {
    incumbent_ = current_;
    incumbent_score_ = score;
    return;  // keep going the same way
  }
  ++dim_;
  direction_ = +1;
  moved_this_dim_ = false;
}

void GridSearch::advance() {
  for (;;) {
    if (dim_ == dims_.size()) {
      if (moved_this_pass_ && pass_ < options_.max_passes) {
        ++pass_;
        dim_ = 0;
        direction_ = +1;
        moved_this_dim_ = false;
        moved_this_pass_ = false;
        continue;
      }
      start_confirm();
      return;
    }
    Point candidate;
    if (!step(candidate)) {
      current_ = incumbent_;
      judge(-1);  // off the grid: as a step that did not help
      continue;
    }
    if (auto it = scored_.find(candidate); it != scored_.end()) {
      current_ = candidate;
      judge(it->second);
      continue;
    }
    // A candidate, and room left for the confirmation it may need.
    if (!fits(options_.repeats + 2 * options_.repeats)) {
      budget_exhausted_ = true;
      start_confirm();
      return;
    }
    current_ = std::move(candidate);
    return;
  }
}

void GridSearch::start_confirm() {
  if (incumbent_ == defaults_) {
    finish(defaults_);
    return;
  }
  if (!fits(2 * options_.repeats)) {  // cannot show it beats them: keep the defaults
    budget_exhausted_ = true;
    finish(defaults_);
    return;
  }
  phase_ = Phase::kConfirm;
  current_ = defaults_;
}

void GridSearch::finish(const Point& chosen) {
  current_ = chosen;
  phase_ = Phase::kDone;
}

}  // namespace hvd::runtime::autotune
