#include "daemon/rendezvous/rounds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <unordered_set>

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

std::string slot_list(const std::vector<int>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

// "rank 2 of 4 has not joined" / "ranks 1, 3 of 4 have not joined"
std::string ranks_missing(const std::vector<int>& missing, int size) {
  if (missing.size() == 1) {
    return "rank " + slot_list(missing) + " of " + std::to_string(size) + " has not joined";
  }
  return "ranks " + slot_list(missing) + " of " + std::to_string(size) + " have not joined";
}

// Horovod's cross ranks of a round, from every rank's local rank (`worlds`
// by rank): among the ranks with this rank's local rank, this one's index
// in rank order (cross_rank), and their number (cross_size).
void set_cross_ranks(std::vector<JoinResult>& worlds) {
  std::map<int, int> with_local_rank;  // local rank -> ranks seen so far
  for (JoinResult& w : worlds) w.cross_rank = with_local_rank[w.local_rank]++;
  for (JoinResult& w : worlds) w.cross_size = with_local_rank[w.local_rank];
}

common::Status closed_status() {
  return common::Status{common::StatusCode::kCancelled, "membership is closed"};
}

}  // namespace

Rounds::Rules Rounds::Rules::fixed_size(int size) { return {size, size, size, true}; }

Rounds::Rules Rounds::Rules::elastic(int initial_size, int min_size, int slots) {
  return {initial_size, std::max(1, min_size), std::max(slots, initial_size), false};
}

Rounds::Rounds(Rules rules, MembershipEvents* events) : rules_(rules), events_(events) {
  for (int slot = 0; slot < rules_.initial_size; ++slot) {
    members_.push_back(slot);
    member_rank_[slot] = slot;
  }
}

std::string Rounds::name_of(int slot) const {
  return (rules_.fixed ? "rank " : "slot ") + std::to_string(slot);
}

std::optional<common::Status> Rounds::refusal(const Request& request) const {
  const common::Placement& p = request.placement;
  const int slots = rules_.slots;
  if (!rules_.fixed) {
    if (p.rank < 0 || p.rank >= slots) {
      return common::invalid_argument("slot " + std::to_string(p.rank) + " is out of range for " +
                                      std::to_string(slots) + " slots");
    }
    return std::nullopt;
  }
  if (slots <= 0) {
    return common::invalid_argument("the job has no ranks (size " + std::to_string(slots) + ")");
  }
  if (p.size != slots) {
    return common::invalid_argument("size " + std::to_string(p.size) +
                                    " differs from the job's size " + std::to_string(slots));
  }
  if (p.local_size < 1 || p.local_rank < 0 || p.local_rank >= p.local_size) {
    return common::invalid_argument("local rank " + std::to_string(p.local_rank) +
                                    " of local size " + std::to_string(p.local_size) +
                                    " is not a placement");
  }
  if (p.rank < -1 || p.rank >= slots) {
    return common::invalid_argument("rank " + std::to_string(p.rank) +
                                    " is out of range for size " + std::to_string(slots));
  }
  return std::nullopt;
}

int Rounds::free_slot_locked() const {
  int slot = 0;
  while (slot < rules_.slots && joined_slots_.count(slot) != 0) ++slot;
  return slot;
}

bool Rounds::member_locked(int slot) const { return member_rank_.count(slot) != 0; }

bool Rounds::ready_locked() const {
  if (static_cast<int>(joining_.size()) < rules_.min_size) return false;
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

std::vector<int> Rounds::missing_locked() const {
  // One lookup per slot in the joiners' set: O(N), not O(N^2) (it runs at
  // every join; issue 31).
  std::vector<int> missing;
  const auto now = Clock::now();
  for (const auto& [slot, until] : expected_) {
    if (now < until && joined_slots_.count(slot) == 0) missing.push_back(slot);
  }
  for (int slot : members_) {
    if (lost_.count(slot) == 0 && joined_slots_.count(slot) == 0) missing.push_back(slot);
  }
  return missing;
}

std::string Rounds::waited_for_locked() const {
  const std::vector<int> missing = missing_locked();
  if (rules_.fixed && !missing.empty()) return ": " + ranks_missing(missing, rules_.slots);
  const std::string because =
      missing.empty() ? "fewer than the " + std::to_string(rules_.min_size) +
                            " workers of --min-np joined"
      : round_ < 0    ? "slots " + slot_list(missing) + " did not join"
                      : "slots " + slot_list(missing) + " did not rejoin";
  return " waiting for elastic round " + std::to_string(round_ + 1) + ": " + because;
}

std::vector<JoinResult> Rounds::worlds_of(const std::vector<Joiner>& order) const {
  const int n = static_cast<int>(order.size());
  std::vector<JoinResult> worlds(static_cast<size_t>(n));
  // A fixed-size job keeps the local ranks its workers reported; otherwise
  // local ranks by host, in rank order. Then Horovod's cross ranks.
  std::map<std::string, int> per_host;
  for (int r = 0; r < n; ++r) {
    const common::Placement& placed = order[static_cast<size_t>(r)].placement;
    JoinResult& world = worlds[static_cast<size_t>(r)];
    world.rank = r;
    world.size = n;
    world.round = round_;
    world.host = placed.host;
    world.local_rank = rules_.fixed ? placed.local_rank : per_host[world.host]++;
    world.local_size = placed.local_size;
  }
  if (!rules_.fixed) {
    for (JoinResult& world : worlds) world.local_size = per_host[world.host];
  }
  set_cross_ranks(worlds);
  return worlds;
}

void Rounds::form_locked(Ready& ready) {
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
  ++round_;
  const std::vector<JoinResult> worlds = worlds_of(order);
  worlds_.clear();
  members_.clear();
  member_rank_.clear();
  for (size_t r = 0; r < order.size(); ++r) {
    worlds_[order[r].slot] = worlds[r];
    members_.push_back(order[r].slot);
    member_rank_[order[r].slot] = static_cast<int>(r);
  }
  lost_.clear();
  const auto now = Clock::now();
  std::erase_if(expected_,
                [&](const auto& e) { return now >= e.second || worlds_.count(e.first) != 0; });
  for (Joiner& j : joining_) {
    if (j.done) ready.emplace_back(std::move(j.done), worlds_.at(j.slot));
  }
  joining_.clear();
  joined_slots_.clear();
  members_joined_ = 0;
  spdlog::info("rendezvous: round {} formed with {} worker(s)", round_, order.size());
}

common::Result<JoinResult> Rounds::join(const Request& request, std::chrono::milliseconds timeout,
                                        const std::function<bool()>& cancelled) {
  const auto deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  return wait_for_answer<common::Result<JoinResult>>(
      [&](std::function<void(common::Result<JoinResult>)> done) {
        return join_async(request, std::move(done));
      },
      [&](uint64_t ticket, GiveUp why) { give_up(ticket, why, timeout); }, deadline, cancelled,
      [&] { recheck(); });  // an expected worker's grace may have ended
}

uint64_t Rounds::join_async(const Request& request, JoinDone done) {
  if (auto refused = refusal(request)) {
    done(std::move(*refused));
    return 0;
  }
  const common::Placement& placement = request.placement;
  Ready ready;
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    // Slot -1 (a fixed-size job only: refusal()): the lowest one free.
    const int slot = placement.rank >= 0 ? placement.rank : free_slot_locked();
    if (closed_) {
      ready.emplace_back(std::move(done), closed_status());
    } else if (slot >= rules_.slots || joined_slots_.count(slot) != 0) {
      ready.emplace_back(std::move(done),
                         common::Status{common::StatusCode::kAlreadyExists,
                                        (slot >= rules_.slots ? "every slot" : name_of(slot)) +
                                            " already joined round " + std::to_string(round_ + 1) +
                                            " (from " + placement.host + ", pid " +
                                            std::to_string(request.pid) + ")"});
    } else {
      // In a fixed-size job a worker's rank is its slot, in every round.
      const int prev_rank = rules_.fixed ? slot : request.prev_rank;
      const auto now = Clock::now();
      ticket = next_ticket_++;
      joining_.push_back({slot, prev_rank, placement, arrivals_++, now, ticket, std::move(done)});
      joined_slots_.insert(slot);
      if (!first_join_) first_join_ = now;
      if (member_locked(slot) && lost_.count(slot) == 0) ++members_joined_;
      spdlog::debug("rendezvous: {} joined round {} from {} (pid {}), {} joining", name_of(slot),
                    round_ + 1, placement.host, request.pid, joining_.size());
      if (ready_locked()) {
        form_locked(ready);
        ticket = 0;
      } else if (events_ != nullptr && round_ >= 0 && !(prev_rank >= 0 && member_locked(slot))) {
        // A newcomer waits while a round runs: its members should let it in.
        MembershipChange added;
        added.round = round_;
        added.hosts = {placement.host};
        added.slots = {slot};
        events_->publish(std::move(added));
      }
    }
  }
  for (auto& [answer, result] : ready) answer(std::move(result));
  return ticket;
}

void Rounds::give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited) {
  JoinDone done;
  common::Status status;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(joining_.begin(), joining_.end(),
                           [&](const Joiner& j) { return j.ticket == ticket; });
    if (ticket == 0 || it == joining_.end() || !it->done) return;
    done = std::move(it->done);
    const int slot = it->slot;
    if (why == GiveUp::kTimeout) {
      // What it waited for, with it still counted; then it is withdrawn.
      status = common::timeout_error("timed out after " + std::to_string(waited.count()) +
                                     " ms" + waited_for_locked());
    } else {
      status = common::Status{common::StatusCode::kCancelled,
                              name_of(slot) + " gave up waiting for the other workers"};
    }
    joining_.erase(it);
    joined_slots_.erase(slot);
    if (member_locked(slot) && lost_.count(slot) == 0) --members_joined_;
  }
  done(std::move(status));
}

void Rounds::recheck() {
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

void Rounds::lost(int slot) { lost(std::vector<int>{slot}); }

Rounds::Removal Rounds::lost(const std::vector<int>& slots) {
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

void Rounds::expect(int slot, std::chrono::milliseconds grace) {
  std::lock_guard lock(mu_);
  expected_[slot] = Clock::now() + grace;
}

std::optional<MembershipChange> Rounds::waiting(int slot) const {
  std::lock_guard lock(mu_);
  if (joining_.empty() || lost_.count(slot) != 0 || !member_locked(slot)) return std::nullopt;
  MembershipChange added;
  added.round = round_;
  for (const Joiner& j : joining_) {
    if (j.slot == slot) return std::nullopt;  // it has rejoined already
    added.hosts.push_back(j.placement.host);
    added.slots.push_back(j.slot);
  }
  return added;
}

int64_t Rounds::round() const {
  std::lock_guard lock(mu_);
  return round_;
}

std::vector<int> Rounds::missing() const {
  std::lock_guard lock(mu_);
  return missing_locked();
}

std::optional<std::chrono::steady_clock::time_point> Rounds::first_join_time() const {
  std::lock_guard lock(mu_);
  return first_join_;
}

std::vector<int> Rounds::lost_members(int64_t round) const {
  std::lock_guard lock(mu_);
  if (round != round_) return {};
  return {lost_.begin(), lost_.end()};
}

std::vector<int> Rounds::ranks_in_round(const std::vector<int>& slots, int64_t round) const {
  std::lock_guard lock(mu_);
  if (round != round_) return {};
  std::vector<int> ranks;
  for (int slot : slots) {
    if (auto it = member_rank_.find(slot); it != member_rank_.end()) ranks.push_back(it->second);
  }
  return ranks;
}

std::optional<Rounds::Forming> Rounds::forming() const {
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

void Rounds::close() {
  std::vector<Joiner> joining;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    joining.swap(joining_);
    joined_slots_.clear();
    members_joined_ = 0;
  }
  for (Joiner& j : joining) {
    if (j.done) j.done(closed_status());
  }
}

}  // namespace hvd::daemon
