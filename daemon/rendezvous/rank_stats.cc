#include "daemon/rendezvous/rank_stats.h"

namespace hvd::daemon {

void RankStats::reported(int slot, int64_t round, const hvd::v1::RankStats& stats,
                         Clock::time_point now) {
  std::lock_guard lock(mu_);
  Report& r = slots_[slot];
  r.stats = stats;
  r.round = round;
  r.at = now;
}

void RankStats::committed(int slot, int64_t commit) {
  std::lock_guard lock(mu_);
  slots_[slot].commit = commit;
}

std::map<int, RankStats::Report> RankStats::all() const {
  std::lock_guard lock(mu_);
  return slots_;
}

}  // namespace hvd::daemon
