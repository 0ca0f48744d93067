#include "daemon/rendezvous/elastic_rounds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "daemon/rendezvous/round_layout.h"

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kCancelPoll = std::chrono::milliseconds(100);

std::string slot_list(const std::vector<int>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

}  // namespace

ElasticRounds::ElasticRounds(int initial_size, int min_size, MembershipEvents* events)
    : initial_size_(initial_size), min_size_(std::max(1, min_size)), events_(events) {
  for (int slot = 0; slot < initial_size_; ++slot) members_.push_back(slot);
}

bool ElasticRounds::member_locked(int slot) const {
  return std::find(members_.begin(), members_.end(), slot) != members_.end();
}

bool ElasticRounds::ready_locked() const {
  if (static_cast<int>(joining_.size()) < min_size_) return false;
  return missing_locked().empty();
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

void ElasticRounds::form_locked() {
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
  }
  lost_.clear();
  const auto now = Clock::now();
  std::erase_if(expected_, [&](const auto& e) { return now >= e.second || worlds_.count(e.first) != 0; });
  joining_.clear();
  spdlog::info("rendezvous: elastic round {} formed with {} worker(s)", round_, n);
  changed_.notify_all();
}

common::Result<JoinResult> ElasticRounds::join(int slot, int prev_rank, const std::string& host,
                                               std::chrono::milliseconds timeout,
                                               const std::function<bool()>& cancelled) {
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  std::unique_lock lock(mu_);
  if (closed_) return common::Status{common::StatusCode::kCancelled, "membership is closed"};
  for (const Joiner& j : joining_) {
    if (j.slot == slot) {
      return common::Status{common::StatusCode::kAlreadyExists,
                            "slot " + std::to_string(slot) + " is already joining round " +
                                std::to_string(round_ + 1)};
    }
  }
  joining_.push_back({slot, prev_rank, host, arrivals_++, Clock::now()});
  const int64_t target = round_ + 1;
  if (ready_locked()) {
    form_locked();
  } else if (events_ != nullptr && round_ >= 0 && !(prev_rank >= 0 && member_locked(slot))) {
    // A newcomer waits while a round runs: its members should let it in.
    MembershipChange added;
    added.round = round_;
    added.hosts = {host};
    added.slots = {slot};
    events_->publish(std::move(added));
  }
  auto withdraw = [&] {
    std::erase_if(joining_, [&](const Joiner& j) { return j.slot == slot; });
  };
  while (round_ < target) {
    if (closed_) {
      withdraw();
      return common::Status{common::StatusCode::kCancelled, "membership is closed"};
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      std::vector<int> missing = missing_locked();
      withdraw();
      std::string why = missing.empty() ? "fewer than the " + std::to_string(min_size_) +
                                              " workers of --min-np joined"
                        : round_ < 0 ? "slots " + slot_list(missing) + " did not join"
                                     : "slots " + slot_list(missing) + " did not rejoin";
      return common::timeout_error("timed out after " + std::to_string(timeout.count()) +
                                   " ms waiting for elastic round " + std::to_string(target) +
                                   ": " + why);
    }
    if (cancelled && cancelled()) {
      withdraw();
      return common::Status{common::StatusCode::kCancelled,
                            "slot " + std::to_string(slot) + " gave up waiting"};
    }
    auto until = deadline;
    if (cancelled && until - now > kCancelPoll) until = now + kCancelPoll;
    for (const auto& e : expected_) {
      if (e.second > now) until = std::min(until, e.second);
    }
    changed_.wait_until(lock, until);
    // An expected worker's grace may have ended: the round forms without it.
    // (Only then: joins and losses form the round themselves, and a check
    // at every waiter's wake-up would cost O(N) per wake-up.)
    if (round_ < target && !expected_.empty() && !joining_.empty() && ready_locked()) {
      form_locked();
    }
  }
  return worlds_.at(slot);
}

void ElasticRounds::lost(int slot) { lost(std::vector<int>{slot}); }

ElasticRounds::Removal ElasticRounds::lost(const std::vector<int>& slots) {
  std::lock_guard lock(mu_);
  Removal removal{round_, {}};
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
    removal.members.push_back(slot);
  }
  if ((was_expected || !removal.members.empty()) && !joining_.empty() && ready_locked()) {
    form_locked();
  }
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
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::daemon
