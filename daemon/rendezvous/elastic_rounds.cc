#include "daemon/rendezvous/elastic_rounds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <unordered_set>

#include "daemon/rendezvous/round_layout.h"

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

std::string slot_list(const std::vector<int>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

}  // namespace

ElasticRounds::ElasticRounds(int initial_size, int min_size, MembershipEvents* events)
    : initial_size_(initial_size), min_size_(std::max(1, min_size)), events_(events) {
  for (int slot = 0; slot < initial_size_; ++slot) {
    members_.push_back(slot);
    member_rank_[slot] = slot;
  }
}

bool ElasticRounds::member_locked(int slot) const {
  return member_rank_.count(slot) != 0;
}

bool ElasticRounds::ready_locked() const {
  if (static_cast<int>(joining_.size()) < min_size_) return false;
  // Counted, not looked up: this runs at every join (O(1) but for the
  // few expected workers; issue 31: a set of the joiners built at every
  // join made a 16k-rank round O(N^2)).
  if (members_joined_ != members_.size() - lost_.size()) return false;
  const auto now = Clock::now();
  for (const auto& [slot, until] : expected_) {
    if (now < until && joined_slots_.count(slot) == 0) return false;
  }
  return true;
}

std::vector<int> ElasticRounds::missing_locked() const {
  // One pass over the joiners, then a lookup per slot: O(N), not O(N^2)
  // (it runs at every join; issue 31).
  std::unordered_set<int> joined;
  joined.reserve(joining_.size());
  for (const Joiner& j : joining_) joined.insert(j.slot);
  std::vector<int> missing;
  const auto now = Clock::now();
  for (const auto& [slot, until] : expected_) {
    if (now < until && joined.count(slot) == 0) missing.push_back(slot);
  }
  for (int slot : members_) {
    if (lost_.count(slot) == 0 && joined.count(slot) == 0) missing.push_back(slot);
  }
  return missing;
}

void ElasticRounds::form_locked(Ready& ready) {
  std::vector<Joiner> order = joining_;
  const std::unordered_set<int> members(members_.begin(), members_.end());
  auto member = [&](const Joiner& j) { return j.prev_rank >= 0 && members.count(j.slot) != 0; };
  std::stable_sort(order.begin(), order.end(), [&](const Joiner& a, const Joiner& b) {
    const bool ma = member(a), mb = member(b);
    if (ma != mb) return ma;  // the members first, the oldest worker rank 0
    return ma ? a.prev_rank < b.prev_rank : a.order < b.order;
  });
  // For the first round, the slots' order (hvdrun's plan) is the rank order.
  if (round_ < 0) {
    std::stable_sort(order.begin(), order.end(),
                     [](const Joiner& a, const Joiner& b) { return a.slot < b.slot; });
  }
  const int n = static_cast<int>(order.size());
  ++round_;
  worlds_.clear();
  members_.clear();
  member_rank_.clear();
  // Local ranks by host, in rank order; then Horovod's cross ranks.
  std::vector<JoinResult> worlds(static_cast<size_t>(n));
  std::map<std::string, int> per_host;
  for (int r = 0; r < n; ++r) {
    JoinResult& world = worlds[static_cast<size_t>(r)];
    world.rank = r;
    world.size = n;
    world.round = round_;
    world.host = order[static_cast<size_t>(r)].host;
    world.local_rank = per_host[world.host]++;
  }
  for (JoinResult& world : worlds) world.local_size = per_host[world.host];
  set_cross_ranks(worlds);
  for (int r = 0; r < n; ++r) {
    worlds_[order[static_cast<size_t>(r)].slot] = worlds[static_cast<size_t>(r)];
    members_.push_back(order[static_cast<size_t>(r)].slot);
    member_rank_[order[static_cast<size_t>(r)].slot] = r;
  }
  lost_.clear();
  const auto now = Clock::now();
  std::erase_if(expected_, [&](const auto& e) { return now >= e.second || worlds_.count(e.first) != 0; });
  for (Joiner& j : joining_) {
    if (j.done) ready.emplace_back(std::move(j.done), worlds_.at(j.slot));
  }
  joining_.clear();
  joined_slots_.clear();
  members_joined_ = 0;
  spdlog::info("rendezvous: elastic round {} formed with {} worker(s)", round_, n);
}

common::Result<JoinResult> ElasticRounds::join(int slot, int prev_rank, const std::string& host,
                                               std::chrono::milliseconds timeout,
                                               const std::function<bool()>& cancelled) {
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  return wait_for_answer<common::Result<JoinResult>>(
      [&](std::function<void(common::Result<JoinResult>)> done) {
        return join_async(slot, prev_rank, host, std::move(done));
      },
      [&](uint64_t ticket, GiveUp why) { give_up(ticket, why, timeout); }, deadline, cancelled,
      [&] { recheck(); });  // an expected worker's grace may have ended
}

uint64_t ElasticRounds::join_async(int slot, int prev_rank, const std::string& host,
                                   JoinDone done) {
  Ready ready;
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      ready.emplace_back(std::move(done),
                         common::Status{common::StatusCode::kCancelled, "membership is closed"});
    } else if (joined_slots_.count(slot) != 0) {
      ready.emplace_back(std::move(done),
                         common::Status{common::StatusCode::kAlreadyExists,
                                        "slot " + std::to_string(slot) +
                                            " is already joining round " +
                                            std::to_string(round_ + 1)});
    } else {
      ticket = next_ticket_++;
      joining_.push_back({slot, prev_rank, host, arrivals_++, Clock::now(), ticket,
                          std::move(done)});
      joined_slots_.insert(slot);
      if (member_locked(slot) && lost_.count(slot) == 0) ++members_joined_;
      if (ready_locked()) {
        form_locked(ready);
        ticket = 0;
      } else if (events_ != nullptr && round_ >= 0 && !(prev_rank >= 0 && member_locked(slot))) {
        // A newcomer waits while a round runs: its members should let it in.
        MembershipChange added;
        added.round = round_;
        added.hosts = {host};
        added.slots = {slot};
        events_->publish(std::move(added));
      }
    }
  }
  for (auto& [answer, result] : ready) answer(std::move(result));
  return ticket;
}

void ElasticRounds::give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited) {
  JoinDone done;
  common::Status status;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(joining_.begin(), joining_.end(),
                           [&](const Joiner& j) { return j.ticket == ticket; });
    if (ticket == 0 || it == joining_.end() || !it->done) return;
    done = std::move(it->done);
    const int slot = it->slot;
    // What it waited for, with it still counted; then it is withdrawn.
    const std::vector<int> missing = missing_locked();
    joining_.erase(it);
    joined_slots_.erase(slot);
    if (member_locked(slot) && lost_.count(slot) == 0) --members_joined_;
    if (why == GiveUp::kTimeout) {
      std::string because = missing.empty() ? "fewer than the " + std::to_string(min_size_) +
                                                  " workers of --min-np joined"
                            : round_ < 0 ? "slots " + slot_list(missing) + " did not join"
                                         : "slots " + slot_list(missing) + " did not rejoin";
      status = common::timeout_error("timed out after " + std::to_string(waited.count()) +
                                     " ms waiting for elastic round " +
                                     std::to_string(round_ + 1) + ": " + because);
    } else {
      status = common::Status{common::StatusCode::kCancelled,
                              "slot " + std::to_string(slot) + " gave up waiting"};
    }
  }
  done(std::move(status));
}

void ElasticRounds::recheck() {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    // Only while a worker is expected: joins and losses form the round
    // themselves, and this is O(N).
    if (closed_ || expected_.empty() || joining_.empty() || !ready_locked()) return;
    form_locked(ready);
  }
  for (auto& [answer, result] : ready) answer(std::move(result));
}

void ElasticRounds::lost(int slot) { lost(std::vector<int>{slot}); }

ElasticRounds::Removal ElasticRounds::lost(const std::vector<int>& slots) {
  Ready ready;
  std::unique_lock lock(mu_);
  Removal removal{round_, {}, {}};
  bool was_expected = false;
  for (int slot : slots) {
    // A member's loss is its own (a spare promoted into its slot stays
    // expected); a slot lost again, or not a member, is its new worker's:
    // a promoted spare that died before its Join is waited for no more.
    if (!member_locked(slot) || lost_.count(slot) != 0) {
      was_expected |= expected_.erase(slot) != 0;
      continue;
    }
    lost_.insert(slot);
    if (joined_slots_.count(slot) != 0) --members_joined_;  // counted no more
    removal.members.push_back(slot);
    removal.ranks.push_back(member_rank_.at(slot));
  }
  if ((was_expected || !removal.members.empty()) && !joining_.empty() && ready_locked()) {
    form_locked(ready);
  }
  lock.unlock();
  for (auto& [answer, result] : ready) answer(std::move(result));
  return removal;
}

void ElasticRounds::expect(int slot, std::chrono::milliseconds grace) {
  std::lock_guard lock(mu_);
  expected_[slot] = Clock::now() + grace;
}

std::optional<MembershipChange> ElasticRounds::waiting(int slot) const {
  std::lock_guard lock(mu_);
  if (joining_.empty() || lost_.count(slot) != 0 || !member_locked(slot)) return std::nullopt;
  MembershipChange added;
  added.round = round_;
  for (const Joiner& j : joining_) {
    if (j.slot == slot) return std::nullopt;  // it has rejoined already
    added.hosts.push_back(j.host);
    added.slots.push_back(j.slot);
  }
  return added;
}

int64_t ElasticRounds::round() const {
  std::lock_guard lock(mu_);
  return round_;
}

std::vector<int> ElasticRounds::lost_members(int64_t round) const {
  std::lock_guard lock(mu_);
  if (round != round_) return {};
  return {lost_.begin(), lost_.end()};
}

std::vector<int> ElasticRounds::ranks_in_round(const std::vector<int>& slots,
                                               int64_t round) const {
  std::lock_guard lock(mu_);
  if (round != round_) return {};
  std::vector<int> ranks;
  for (int slot : slots) {
    if (auto it = member_rank_.find(slot); it != member_rank_.end()) ranks.push_back(it->second);
  }
  return ranks;
}

std::optional<ElasticRounds::Forming> ElasticRounds::forming() const {
  std::lock_guard lock(mu_);
  // Only newcomers waiting is no stall: the round runs, and its members let
  // them in at their next commit (however long the user trains between two).
  std::optional<Clock::time_point> since;
  // Every member of the last round lost: nobody trains, the newcomers'
  // round is the job's (after every worker died at once, say).
  const bool no_members = round_ >= 0 && lost_.size() >= members_.size();
  for (const Joiner& j : joining_) {
    if (round_ >= 0 && !no_members && !(j.prev_rank >= 0 && member_locked(j.slot))) continue;
    since = since ? std::min(*since, j.since) : j.since;
  }
  if (!since) return std::nullopt;
  Forming forming{round_ + 1, *since, {}, missing_locked()};
  for (const Joiner& j : joining_) forming.joined.push_back(j.slot);
  std::sort(forming.joined.begin(), forming.joined.end());
  return forming;
}

void ElasticRounds::close() {
  std::vector<Joiner> joining;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    joining.swap(joining_);
    joined_slots_.clear();
    members_joined_ = 0;
  }
  for (Joiner& j : joining) {
    if (j.done) j.done(common::Status{common::StatusCode::kCancelled, "membership is closed"});
  }
}

}  // namespace hvd::daemon
