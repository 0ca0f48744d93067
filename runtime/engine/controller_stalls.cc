// The controller's answers to ops that cannot run (docs/engine.md): stall
// warnings and the stall shutdown for tensors some ranks have not submitted,
// the no-progress check for a set whose ranks all wait on one another, and
// which ranks wait at all (the engine's pacing).
#include <algorithm>
#include <string>
#include <utility>

#include "runtime/engine/controller.h"
#include "runtime/engine/no_progress.h"

namespace hvd::runtime::engine {

namespace {

using common::Status;

// How often (by rank 0's clock) the stall inspector looks at what is pending.
constexpr int64_t kStallCheckPeriodNs = 100'000'000;

Clock::time_point at_ns(int64_t ns) { return Clock::time_point(std::chrono::nanoseconds(ns)); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::string set_name(int32_t id) {
  return id == 0 ? "the global process set" : "process set " + std::to_string(id);
}

}  // namespace

void Controller::collect_pending(std::vector<PendingTensor>& out, bool with_complete) const {
  out.clear();
  const int n = size();
  auto add = [&](const std::string& name, int64_t first_ns, auto holds) {
    PendingTensor& t = out.emplace_back();
    t.name = name;
    t.first_submitted = at_ns(first_ns);
    for (int r = 0; r < n; ++r) {
      if (holds(r)) {
        t.submitted_ranks.push_back(global(r));
      } else if (!joined(r)) {
        t.missing_ranks.push_back(global(r));
      }
    }
  };
  for (const auto& [name, row] : table_) {
    if (row.complete_cycle >= 0 && !with_complete) continue;  // complete, waiting for its group
    add(name, row.first_seen_ns, [&](int r) { return row.announced[static_cast<size_t>(r)] != 0; });
  }
  for (const auto& [bit, seen] : partial_bits_) {
    add(cache_.at(bit).name, seen.first, [&](int r) { return has_bit(r, bit); });
  }
}

bool Controller::has_news() const {
  return std::any_of(pending_.begin(), pending_.end(),
                     [](const auto& p) { return p.second.cache_bit < 0 && !p.second.announced; });
}

void Controller::note_waiting() {
  const int n = size();
  waits_.assign(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) waits_[static_cast<size_t>(r)] = joined(r) ? 1 : 0;
  for (const auto& [name, row] : table_) {
    for (int r = 0; r < n; ++r) waits_[static_cast<size_t>(r)] |= row.announced[static_cast<size_t>(r)];
  }
  for (const auto& [bit, seen] : partial_bits_) {
    for (int r = 0; r < n; ++r) waits_[static_cast<size_t>(r)] |= has_bit(r, bit) ? 1 : 0;
  }
  every_rank_waits_ = std::all_of(waits_.begin(), waits_.end(), [](uint8_t w) { return w != 0; });
}

void Controller::inspect_stalls(CyclePlan& plan) {
  if (options_.stall_warning.count() == 0 && options_.stall_shutdown.count() == 0) return;
  if (stall_checked_ && clock_ns_ - last_stall_check_ns_ < kStallCheckPeriodNs) return;
  if (table_.empty() && partial_bits_.empty()) return;
  stall_checked_ = true;
  last_stall_check_ns_ = clock_ns_;
  collect_pending(stalled_, false);
  StallReport report = inspector_.check(stalled_, at_ns(clock_ns_));
  plan.stall_warning = std::move(report.warning);
  if (!plan.stall_warning.empty()) counters_.bump(counters_.stall_warnings);
  for (const std::string& name : report.expired) {
    auto t = std::find_if(stalled_.begin(), stalled_.end(),
                          [&](const PendingTensor& p) { return p.name == name; });
    std::vector<int> missing = t != stalled_.end() ? t->missing_ranks : std::vector<int>{};
    Status error = common::timeout_error(
        "tensor '" + name + "' stalled: rank" + (missing.size() == 1 ? " " : "s ") +
        rank_list(missing) + " did not submit it within " +
        std::to_string(options_.stall_shutdown.count()) +
        " s (HVD_STALL_SHUTDOWN_TIME_SECONDS); it failed on every rank");
    // The members of its group (if any) can never run now: they fail with it.
    std::vector<std::string> names{name};
    if (auto row = table_.find(name); row != table_.end()) {
      const Row& r = row->second;
      size_t first = 0;
      while (r.announced[first] == 0) ++first;
      int32_t group = r.requests[first].group_id;
      table_.erase(row);
      if (group >= 0) {
        for (auto it = table_.begin(); it != table_.end();) {
          size_t k = 0;
          while (it->second.announced[k] == 0) ++k;
          if (it->second.requests[k].group_id == group) {
            names.push_back(it->first);
            it = table_.erase(it);
          } else {
            ++it;
          }
        }
      }
    } else if (auto bit = cache_.find_name(name)) {
      partial_bits_.erase(*bit);
    }
    for (const std::string& failed : names) {
      Response& resp = plan.responses.emplace_back();
      resp.error = failed == name ? error
                                  : Status(error.code(), error.message() + " (failing its group, '" +
                                                             failed + "' with it)");
      take_entry(failed, resp);
      if (!resp.has_entry) resp.request.name = failed;
    }
  }
}

void Controller::check_progress(CyclePlan& plan) {
  bool all_blocked = true;
  for (int r = 0; r < size() && all_blocked; ++r) {
    all_blocked = (header(r).flags() & kFlagBlocked) != 0;
  }
  const bool progressed = !plan.responses.empty() || plan.join_done;
  if (!no_progress_.observe(all_blocked, progressed, clock_ns_)) return;
  collect_pending(stalled_, true);
  std::string message =
      no_progress_message(stalled_, set_name(options_.process_set_id), no_progress_.limit());
  fail_pending(common::aborted(message), plan);
  plan.no_progress = std::move(message);
  plan.restart_names = cycle_;  // the same cycle number on every rank of the set
}

void Controller::fail_pending(const Status& error, CyclePlan& plan) {
  for (const auto& [name, row] : table_) {
    Response& resp = plan.responses.emplace_back();
    resp.error = error;
    take_entry(name, resp);
    if (!resp.has_entry) resp.request.name = name;
  }
  table_.clear();
  partial_bits_.clear();
  for (auto& [name, entry] : pending_) {
    Response& resp = plan.responses.emplace_back();
    resp.error = error;
    resp.entry = std::move(entry);
    resp.has_entry = true;
  }
  pending_.clear();
  if (join_entry_) {
    Response& resp = plan.responses.emplace_back();
    resp.error = error;
    resp.entry = std::move(*join_entry_);
    resp.has_entry = true;
    join_entry_.reset();
  }
}

}  // namespace hvd::runtime::engine
