#include "runtime/engine/controller.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include "runtime/engine/agreement.h"
#include "runtime/engine/message_codec.h"
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

Controller::Controller(ControllerOptions options, transports::Transport& transport,
                       EngineCounters& counters)
    : options_(std::move(options)),
      transport_(transport),
      counters_(counters),
      cache_(options_.cache_capacity),
      inspector_(options_.stall_warning, options_.stall_shutdown),
      no_progress_(options_.no_progress) {
  const size_t n = options_.global_ranks.size();
  const size_t hb = header_bytes(options_.cache_capacity);
  bits_.assign(cache_words(options_.cache_capacity), 0);
  header_out_.assign(hb, 0);
  headers_in_.assign(hb * n, 0);
  header_counts_.assign(n, static_cast<int64_t>(hb));
  payload_counts_.assign(n, 0);
  joined_cycle_.assign(n, -1);
}

HeaderView Controller::header(int r) const {
  const size_t hb = header_out_.size();
  return HeaderView(std::span<const uint8_t>(headers_in_.data() + hb * static_cast<size_t>(r), hb));
}

bool Controller::has_bit(int r, size_t bit) const {
  return ((header(r).word(bit / 64) >> (bit % 64)) & 1u) != 0;
}

void Controller::add(std::vector<Entry>& drained, CyclePlan& plan) {
  for (Entry& e : drained) {
    if (e.request.op_type == OpType::kJoin) {
      join_entry_ = std::move(e);
      continue;
    }
    if (join_entry_) {
      std::string message = "cannot run '" + e.request.name +
                             "': join() is pending on this rank (ops enqueued after join() fail "
                             "until it completes)";
      plan.refused.emplace_back(std::move(e), common::failed_precondition(std::move(message)));
      continue;
    }
    e.announced = false;
    auto bit = cache_.lookup(e.request);
    e.cache_bit = bit ? static_cast<int64_t>(*bit) : -1;
    std::string name = e.request.name;
    auto [it, inserted] = pending_.try_emplace(std::move(name), std::move(e));
    if (!inserted) {  // the queue refuses duplicates; kept as a safety net
      plan.refused.emplace_back(std::move(e), Status(common::StatusCode::kAlreadyExists,
                                                     "a tensor named '" + it->first +
                                                         "' is already in flight"));
    }
  }
  drained.clear();
}

Status Controller::exchange(bool stop, bool blocked) {
  announce_.clear();
  std::fill(bits_.begin(), bits_.end(), 0);
  for (auto& [name, e] : pending_) {
    if (e.cache_bit >= 0) {
      auto bit = static_cast<size_t>(e.cache_bit);
      bits_[bit / 64] |= uint64_t{1} << (bit % 64);
    } else if (!e.announced) {
      announce_.push_back(&e.request);
      e.announced = true;
    }
  }
  if (announce_.empty()) {
    payload_out_.clear();
  } else {
    encode_requests(announce_, payload_out_);
  }
  HeaderFields fields;
  fields.payload_bytes = payload_out_.size();
  fields.flags = (join_entry_ ? kFlagJoined : 0u) | (stop ? kFlagShutdown : 0u) |
                 (blocked ? kFlagBlocked : 0u);
  fields.clock_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count();
  fields.tune = tune_out_;
  encode_header(fields, bits_, payload_out_, header_out_);

  const int n = size();
  if (n == 1) {
    std::memcpy(headers_in_.data(), header_out_.data(), header_out_.size());
  } else {
    HVD_RETURN_IF_ERROR(transport_.allgatherv({header_out_.data(), header_out_.size()},
                                              {headers_in_.data(), headers_in_.size()},
                                              header_counts_));
  }
  // Payloads too large for the header follow in a second allgatherv, from
  // the ranks that have them (the others send nothing).
  int64_t total = 0;
  had_payload_ = false;
  for (int r = 0; r < n; ++r) {
    HeaderView h = header(r);
    had_payload_ = had_payload_ || h.payload_bytes() > 0;
    int64_t outside = h.payload_inline() ? 0 : static_cast<int64_t>(h.payload_bytes());
    payload_counts_[static_cast<size_t>(r)] = outside;
    total += outside;
  }
  if (had_payload_) counters_.bump(counters_.payload_exchanges);
  if (total == 0) return Status::ok();
  counters_.bump(counters_.large_payloads);
  payloads_in_.resize(static_cast<size_t>(total));
  const bool mine_outside = payload_counts_[static_cast<size_t>(rank())] > 0;
  if (n == 1) {
    std::memcpy(payloads_in_.data(), payload_out_.data(), payload_out_.size());
    return Status::ok();
  }
  return transport_.allgatherv({payload_out_.data(), mine_outside ? payload_out_.size() : 0},
                               {payloads_in_.data(), payloads_in_.size()}, payload_counts_);
}

Status Controller::negotiate(bool stop, bool blocked, CyclePlan& plan) {
  ++cycle_;
  HVD_RETURN_IF_ERROR(exchange(stop, blocked));
  counters_.bump(counters_.cycles);
  const int n = size();
  clock_ns_ = header(0).clock_ns();

  for (int r = 0; r < n; ++r) {
    if ((header(r).flags() & kFlagShutdown) != 0 && (plan.shutdown_rank < 0 || r == rank())) {
      plan.shutdown_rank = global(r);
      plan.shutdown_self = r == rank();
    }
  }
  if (plan.shutdown_rank >= 0) return Status::ok();

  for (int r = 0; r < n; ++r) {
    int64_t& since = joined_cycle_[static_cast<size_t>(r)];
    if ((header(r).flags() & kFlagJoined) == 0) {
      since = -1;
    } else if (since < 0) {
      since = cycle_;
    }
  }
  HVD_RETURN_IF_ERROR(read_payloads());
  collect_cached(plan);
  collect_rows(plan);
  inspect_stalls(plan);
  complete_join(plan);
  check_progress(plan);
  note_waiting();
  counters_.bump(counters_.responses, static_cast<int64_t>(plan.responses.size()));
  return Status::ok();
}

Status Controller::read_payloads() {
  if (!had_payload_) return Status::ok();
  decoded_.clear();
  size_t offset = 0;
  for (int r = 0; r < size(); ++r) {
    HeaderView h = header(r);
    if (h.payload_bytes() == 0) continue;
    if (h.payload_inline()) {
      HVD_RETURN_IF_ERROR(decode_requests(h.inline_payload(), r, decoded_));
      continue;
    }
    auto count = static_cast<size_t>(payload_counts_[static_cast<size_t>(r)]);
    HVD_RETURN_IF_ERROR(decode_requests(
        std::span<const uint8_t>(payloads_in_.data() + offset, count), r, decoded_));
    offset += count;
  }
  bool erased = false;
  for (Request& request : decoded_) {
    // A full announcement of a cached name (with another signature) retires
    // the cache bit everywhere: its holders announce in full next cycle.
    if (auto bit = cache_.find_name(request.name)) {
      cache_.erase(*bit);
      partial_bits_.erase(*bit);
      erased = true;
    }
    auto [it, inserted] = table_.try_emplace(request.name);
    Row& row = it->second;
    if (inserted) {
      row.requests.resize(static_cast<size_t>(size()));
      row.announced.assign(static_cast<size_t>(size()), 0);
      row.first_seen_ns = clock_ns_;
    }
    auto r = static_cast<size_t>(request.rank);
    if (row.announced[r] == 0) {
      row.announced[r] = 1;
      ++row.count;
    }
    row.requests[r] = std::move(request);
  }
  if (erased) revalidate_bits();
  return Status::ok();
}

void Controller::revalidate_bits() {
  for (auto& [name, e] : pending_) {
    if (e.cache_bit < 0) continue;
    auto bit = cache_.lookup(e.request);
    if (!bit || static_cast<int64_t>(*bit) != e.cache_bit) e.cache_bit = -1;
  }
}

void Controller::take_entry(const std::string& name, Response& resp) {
  auto it = pending_.find(name);
  if (it == pending_.end()) return;
  resp.entry = std::move(it->second);
  resp.has_entry = true;
  pending_.erase(it);
}

// rows: see Response. `row` is null for a cached response (then the ranks
// holding the op are those with the bit set).
void Controller::set_rows(Response& resp, const Row* row, size_t bit) {
  const Request& op = resp.op();
  const int n = size();
  auto holds = [&](int r) {
    return row != nullptr ? row->announced[static_cast<size_t>(r)] != 0 : has_bit(r, bit);
  };
  auto request_of = [&](int r) -> const Request& {
    return row != nullptr ? row->requests[static_cast<size_t>(r)] : op;
  };
  // As in Horovod, only allreduce (joined ranks give zeros) and barrier run
  // while some rank of the set has joined; the other ops fail on the ranks
  // that did not join.
  if (op.op_type != OpType::kAllreduce && op.op_type != OpType::kBarrier) {
    for (int r = 0; r < n; ++r) {
      if (holds(r)) continue;
      std::string what(op_type_name(op.op_type));
      what[0] = static_cast<char>(what[0] - 'a' + 'A');
      resp.error = common::failed_precondition(
          what + " is not supported with Join at this time ('" + op.name + "': rank " +
          std::to_string(global(r)) + " has joined)" +
          (op.op_type == OpType::kAllgather
               ? ". Specify sparse_as_dense=True if using DistributedOptimizer"
               : ""));
      return;
    }
  }
  if (op.op_type != OpType::kAllgather && op.op_type != OpType::kAlltoall) return;
  resp.rows.assign(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    const Request& q = request_of(r);
    if (q.shape.empty()) continue;  // refused at enqueue; the agreement check reports it
    if (op.op_type == OpType::kAllgather) {
      resp.rows[static_cast<size_t>(r)] = q.shape[0];
    } else {
      resp.rows[static_cast<size_t>(r)] =
          q.splits.empty() ? q.shape[0] / n : q.splits[static_cast<size_t>(rank())];
    }
  }
}

void Controller::collect_cached(CyclePlan& plan) {
  const int n = size();
  for (size_t w = 0; w < bits_.size(); ++w) {
    uint64_t all = ~uint64_t{0};
    uint64_t any = 0;
    for (int r = 0; r < n; ++r) {
      uint64_t word = header(r).word(w);
      any |= word;
      if (!joined(r)) all &= word;
    }
    uint64_t ready = all & any;
    for (uint64_t bits = any; bits != 0; bits &= bits - 1) {
      size_t bit = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      if (!cache_.occupied(bit)) continue;  // erased this cycle
      bool is_ready = ((ready >> (bit % 64)) & 1u) != 0;
      if (!is_ready) {
        auto [it, inserted] = partial_bits_.try_emplace(bit, clock_ns_, cycle_);
        it->second.second = cycle_;
        continue;
      }
      partial_bits_.erase(bit);
      Response& resp = plan.responses.emplace_back();
      resp.cache_bit = static_cast<int64_t>(bit);
      const Request& cached = cache_.at(bit);
      auto it = pending_.find(cached.name);
      if (it != pending_.end() && it->second.cache_bit == static_cast<int64_t>(bit)) {
        take_entry(cached.name, resp);
      } else {
        resp.request = cached;  // this rank joined without it
      }
      set_rows(resp, nullptr, bit);
      counters_.bump(counters_.cache_hits);
    }
  }
  // Bits no longer partially set (agreed, or their holders moved on).
  for (auto it = partial_bits_.begin(); it != partial_bits_.end();) {
    it = it->second.second == cycle_ ? std::next(it) : partial_bits_.erase(it);
  }
}

void Controller::collect_rows(CyclePlan& plan) {
  const int n = size();
  ready_.clear();
  std::unordered_map<int32_t, int> group_complete;
  for (auto it = table_.begin(); it != table_.end(); ++it) {
    Row& row = it->second;
    if (row.complete_cycle < 0) {
      bool complete = true;
      for (int r = 0; r < n && complete; ++r) {
        complete = joined(r) || row.announced[static_cast<size_t>(r)] != 0;
      }
      if (!complete) continue;
      row.complete_cycle = cycle_;
    }
    ready_.push_back(it);
  }
  if (ready_.empty()) return;
  // A grouped op is ready only with every member of its group.
  auto first_request = [](const Row& row) -> const Request& {
    size_t r = 0;
    while (row.announced[r] == 0) ++r;
    return row.requests[r];
  };
  for (RowIterator it : ready_) {
    const Request& q = first_request(it->second);
    if (q.group_id >= 0) ++group_complete[q.group_id];
  }
  std::erase_if(ready_, [&](RowIterator it) {
    const Request& q = first_request(it->second);
    return q.group_id >= 0 && group_complete[q.group_id] < q.group_size;
  });
  std::stable_sort(ready_.begin(), ready_.end(), [](RowIterator a, RowIterator b) {
    return a->second.complete_cycle < b->second.complete_cycle;
  });

  // Agreement across ranks; one failing member fails its whole group.
  std::vector<Status> errors(ready_.size());
  std::unordered_map<int32_t, Status> group_errors;
  std::vector<const Request*> announced;
  for (size_t i = 0; i < ready_.size(); ++i) {
    const Row& row = ready_[i]->second;
    announced.clear();
    for (int r = 0; r < n; ++r) {
      if (row.announced[static_cast<size_t>(r)] != 0) {
        announced.push_back(&row.requests[static_cast<size_t>(r)]);
      }
    }
    errors[i] = check_agreement(announced, options_.global_ranks);
    int32_t group = first_request(row).group_id;
    if (!errors[i].is_ok() && group >= 0 && group_errors.count(group) == 0) {
      group_errors[group] = errors[i];
    }
  }
  for (size_t i = 0; i < ready_.size(); ++i) {
    RowIterator it = ready_[i];
    Row& row = it->second;
    const Request& first = first_request(row);
    Response& resp = plan.responses.emplace_back();
    resp.error = errors[i];
    if (resp.error.is_ok() && first.group_id >= 0) {
      auto g = group_errors.find(first.group_id);
      if (g != group_errors.end()) {
        resp.error = Status(g->second.code(), g->second.message() + " (failing its group, '" +
                                                  it->first + "' with it)");
      }
    }
    take_entry(it->first, resp);
    if (!resp.has_entry) resp.request = first;
    bool identical = row.count == n;
    for (int r = 0; r < n && identical; ++r) {
      identical = same_signature(row.requests[static_cast<size_t>(r)], first);
    }
    if (resp.error.is_ok()) set_rows(resp, &row, 0);
    resp.cacheable = resp.error.is_ok() && identical && first.group_id < 0;
    table_.erase(it);
  }
}

void Controller::complete_join(CyclePlan& plan) {
  const int n = size();
  for (int r = 0; r < n; ++r) {
    if (!joined(r)) return;
  }
  int last = 0;
  for (int r = 1; r < n; ++r) {
    if (joined_cycle_[static_cast<size_t>(r)] >= joined_cycle_[static_cast<size_t>(last)]) last = r;
  }
  plan.join_done = true;
  plan.join_last_rank = global(last);
  // Ranks that joined early made fewer unnamed calls than the others (and
  // the others' refused ones count too): every rank numbers afresh, in step.
  plan.restart_names = cycle_;
  if (join_entry_) {
    plan.join_entry = std::move(join_entry_);
    join_entry_.reset();
  }
  std::fill(joined_cycle_.begin(), joined_cycle_.end(), -1);
}

void Controller::finish(const CyclePlan& plan) {
  bool put = false;
  for (const Response& resp : plan.responses) {
    if (resp.cache_bit >= 0) {
      auto bit = static_cast<size_t>(resp.cache_bit);
      if (cache_.occupied(bit)) cache_.touch(bit);
    } else if (resp.cacheable) {
      put = cache_.put(resp.op()).has_value() || put;
    }
  }
  if (put) revalidate_bits();
}

void Controller::take_all(std::vector<Entry>& out) {
  for (auto& [name, e] : pending_) out.push_back(std::move(e));
  pending_.clear();
  if (join_entry_) {
    out.push_back(std::move(*join_entry_));
    join_entry_.reset();
  }
  table_.clear();
  partial_bits_.clear();
}

// The answers to ops that cannot run (docs/engine.md): stall warnings and
// the stall shutdown for tensors some ranks have not submitted, the
// no-progress check for a set whose ranks all wait on one another, and which
// ranks wait at all (the engine's pacing).

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
