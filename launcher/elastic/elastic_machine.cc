#include "launcher/elastic/elastic_machine.h"

#include <algorithm>
#include <map>

#include "launcher/exit_codes.h"

namespace hvd::launcher::elastic {

namespace {

std::string slot_list(const std::vector<int>& slots) {
  std::string out = slots.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < slots.size(); ++i) out += (i ? ", " : "") + std::to_string(slots[i]);
  return out;
}

// A promoted spare is announced before its slot is lost (PromoteSpare).
void promotions_first(Actions& out, size_t from) {
  std::stable_partition(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
                        [](const Action& a) { return std::holds_alternative<PromoteSpare>(a); });
}

}  // namespace

const char* state_name(State state) {
  switch (state) {
    case State::kStarting: return "starting";
    case State::kRunning: return "running";
    case State::kResetting: return "resetting";
    case State::kFailed: return "failed";
    case State::kDone: return "done";
  }
  return "?";
}

ElasticMachine::ElasticMachine(Limits limits, HostTable hosts,
                               const std::vector<std::string>& initial, Clock::time_point now)
    : limits_(limits),
      hosts_(std::move(hosts)),
      workers_(static_cast<size_t>(std::max<int>(limits.max_np, static_cast<int>(initial.size())))),
      spares_(limits.spares, static_cast<int>(workers_.size())),
      watch_({limits.stopped_timeout, limits.start_timeout}),
      initial_np_(static_cast<int>(initial.size())) {
  for (size_t slot = 0; slot < initial.size(); ++slot) {
    workers_[slot] = {initial[slot], Phase::kStarting, /*initial=*/true, static_cast<int>(slot)};
  }
  Actions ignored;
  check_min(ignored, now);
}

int ElasticMachine::live_count() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [&](const Worker& w) { return live(w); }));
}

int ElasticMachine::live_on(const std::string& host) const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(), [&](const Worker& w) {
    return live(w) && w.host == host;
  }));
}

std::vector<int> ElasticMachine::live_slots() const {
  std::vector<int> out;
  for (size_t s = 0; s < workers_.size(); ++s) {
    if (live(workers_[s])) out.push_back(static_cast<int>(s));
  }
  return out;
}

std::string ElasticMachine::host_of(int slot) const {
  if (spares_.is_spare_id(slot)) return spares_.host_of(slot);
  if (slot < 0 || static_cast<size_t>(slot) >= workers_.size()) return "";
  return workers_[static_cast<size_t>(slot)].host;
}

int ElasticMachine::slot_of_process(int process) const {
  std::optional<int> slot = process;
  if (spares_.is_spare_id(process)) slot = spares_.slot_of(process);
  if (!slot || *slot < 0 || static_cast<size_t>(*slot) >= workers_.size()) return -1;
  return workers_[static_cast<size_t>(*slot)].process == process ? *slot : -1;
}

int ElasticMachine::process_of(int slot) const {
  if (slot < 0 || static_cast<size_t>(slot) >= workers_.size()) return -1;
  return workers_[static_cast<size_t>(slot)].process;
}

bool ElasticMachine::starting(int slot) const {
  return slot >= 0 && static_cast<size_t>(slot) < workers_.size() &&
         workers_[static_cast<size_t>(slot)].phase == Phase::kStarting;
}

bool ElasticMachine::finishing() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const Worker& w) { return w.phase == Phase::kFinished; });
}

std::string ElasticMachine::place(const std::string& preferred, Clock::time_point now) const {
  auto fits = [&](const std::string& host) {
    return hosts_.usable(host, now) && live_on(host) < hosts_.slots(host);
  };
  if (!preferred.empty() && fits(preferred)) return preferred;
  for (const std::string& host : hosts_.hosts()) {
    if (fits(host)) return host;
  }
  return "";
}

void ElasticMachine::fail(Actions& out, int code, std::string error) {
  if (state_ == State::kFailed || state_ == State::kDone) return;
  state_ = State::kFailed;
  out.push_back(EndJob{code, std::move(error)});
}

void ElasticMachine::replace(int slot, const std::string& what, int code, Actions& out,
                             Clock::time_point now) {
  if (resets_ >= limits_.reset_limit) {
    fail(out, code,
         what + "; the reset limit (" + std::to_string(limits_.reset_limit) +
             ", --reset-limit) is used up");
    return;
  }
  ++resets_;
  Worker& w = workers_[static_cast<size_t>(slot)];
  if (std::string promoted = promote_into(slot, w.host, out, now); !promoted.empty()) {
    out.push_back(Say{what + "; " + promoted + " (reset " + std::to_string(resets_) + " of " +
                      std::to_string(limits_.reset_limit) + ")"});
    refill_spares(out, now);
    return;
  }
  const std::string host = place(w.host, now);
  if (host.empty()) {
    out.push_back(Say{what + "; no usable host has a free slot for a replacement (reset " +
                      std::to_string(resets_) + " of " + std::to_string(limits_.reset_limit) +
                      ")"});
    return;
  }
  const std::string where = host == w.host ? "" : " on host " + host;
  w = {host, Phase::kStarting, false, slot};
  out.push_back(StartWorker{slot, host, true});
  out.push_back(Say{what + "; started a replacement" + where + " (reset " +
                    std::to_string(resets_) + " of " + std::to_string(limits_.reset_limit) +
                    ")"});
}

Actions ElasticMachine::worker_exited(int slot, bool failed, int code, const std::string& what,
                                      Clock::time_point now) {
  Actions out;
  if (slot < 0 || static_cast<size_t>(slot) >= workers_.size()) return out;
  Worker& w = workers_[static_cast<size_t>(slot)];
  if (!live(w) || state_ == State::kFailed || state_ == State::kDone) return out;
  watch_.forget(w.process);  // its replacement is watched afresh
  if (w.phase == Phase::kStopping) {  // stopped by hvdrun: expected
    w.phase = Phase::kGone;
  } else if (!failed) {
    w.phase = Phase::kFinished;
  } else if (finishing()) {
    w.phase = Phase::kGone;
    out.push_back(Say{what + " after other workers finished"});
  } else {
    w.phase = Phase::kGone;
    lost_since_full_ = true;
    const size_t lost_at = out.size();
    out.push_back(SlotLost{slot});
    if (state_ == State::kRunning) state_ = State::kResetting;
    if (auto cooldown = hosts_.worker_failed(w.host, now)) {
      out.push_back(Say{"host " + w.host + " is blacklisted for " +
                        std::to_string(cooldown->count()) + " s: " +
                        std::to_string(kFailuresToBlacklist) + " failed workers in a row"});
    }
    replace(slot, what, code, out, now);
    promotions_first(out, lost_at);
  }
  check_done(out);
  check_min(out, now);
  return out;
}

Actions ElasticMachine::start_failed(int slot, const std::string& why, Clock::time_point now) {
  Actions out;
  if (spares_.is_spare_id(slot)) {  // tick() starts another on a usable host
    const std::string host = spares_.host_of(slot);
    watch_.forget(slot);
    if (!spares_.gone(slot) || state_ == State::kFailed || state_ == State::kDone) return out;
    const auto cooldown = hosts_.agent_lost(host, now);
    out.push_back(Say{"cannot start hot spare " + std::to_string(slot) + " on host " + host +
                      ": " + why + "; host " + host + " is blacklisted for " +
                      std::to_string(cooldown.count()) + " s"});
    return out;
  }
  if (slot < 0 || static_cast<size_t>(slot) >= workers_.size()) return out;
  Worker& w = workers_[static_cast<size_t>(slot)];
  if (w.phase != Phase::kStarting) return out;
  if (state_ == State::kFailed || state_ == State::kDone) return out;  // the job is ending
  w.phase = Phase::kGone;
  watch_.forget(w.process);
  const auto cooldown = hosts_.agent_lost(w.host, now);
  out.push_back(Say{"cannot start rank " + std::to_string(slot) + " on host " + w.host + ": " +
                    why + "; host " + w.host + " is blacklisted for " +
                    std::to_string(cooldown.count()) + " s"});
  if (const std::string host = place("", now); !host.empty() && !finishing()) {
    workers_[static_cast<size_t>(slot)] = {host, Phase::kStarting, false, slot};
    out.push_back(StartWorker{slot, host, true});
  }
  check_min(out, now);
  return out;
}

Actions ElasticMachine::agent_lost(const std::vector<std::string>& hosts, const std::string& why,
                                   Clock::time_point now) {
  Actions out;
  if (state_ == State::kFailed || state_ == State::kDone) return out;
  HostsChanged change;
  for (const std::string& host : hosts) {
    std::vector<int> slots;
    for (size_t s = 0; s < workers_.size(); ++s) {
      Worker& w = workers_[s];
      if (!live(w) || w.host != host) continue;
      w.phase = Phase::kGone;
      watch_.forget(w.process);
      slots.push_back(static_cast<int>(s));
      out.push_back(SlotLost{static_cast<int>(s)});
    }
    std::string spares_there;
    for (int id : spares_.live_ids(host)) {
      spares_.gone(id);
      watch_.forget(id);
      spares_there += (spares_there.empty() ? "hot spare " : ", ") + std::to_string(id);
    }
    if (!spares_there.empty()) spares_there = (slots.empty() ? " (" : "; ") + spares_there;
    const auto cooldown = hosts_.agent_lost(host, now);
    out.push_back(Say{"lost the agent on host " + host +
                      (slots.empty() ? std::string() : " (" + slot_list(slots)) + spares_there +
                      (slots.empty() && spares_there.empty() ? "" : ")") + ": " +
                      why + "; host " + host + " is blacklisted for " +
                      std::to_string(cooldown.count()) + " s"});
    change.removed.push_back(host);
    change.removed_slots.insert(change.removed_slots.end(), slots.begin(), slots.end());
  }
  if (change.removed_slots.empty()) {
    check_done(out);
    check_min(out, now);
    return out;
  }
  out.push_back(change);
  lost_since_full_ = true;
  if (!finishing()) {
    if (state_ == State::kRunning) state_ = State::kResetting;
    if (resets_ >= limits_.reset_limit) {
      fail(out, exit_code::kAgentFailure,
           "lost the agent on host " + hosts.front() + ": " + why + "; the reset limit (" +
               std::to_string(limits_.reset_limit) + ", --reset-limit) is used up");
      return out;
    }
    ++resets_;
    for (int slot : change.removed_slots) {
      if (std::string promoted = promote_into(slot, "", out, now); !promoted.empty()) {
        out.push_back(Say{promoted});
        continue;
      }
      const std::string host = place("", now);
      if (host.empty()) break;
      workers_[static_cast<size_t>(slot)] = {host, Phase::kStarting, false, slot};
      out.push_back(StartWorker{slot, host, true});
      out.push_back(Say{"started rank " + std::to_string(slot) + " again on host " + host});
    }
    promotions_first(out, 0);
  }
  refill_spares(out, now);
  check_done(out);
  check_min(out, now);
  return out;
}

Actions ElasticMachine::hosts_discovered(const std::vector<HostSlots>& list,
                                         Clock::time_point now) {
  Actions out;
  if (state_ == State::kFailed || state_ == State::kDone) return out;
  const HostChanges changes = hosts_.update(list);
  HostsChanged change{changes.added, changes.removed, {}};
  // Workers beyond a host's slots (all of a removed host's) are stopped,
  // the highest slots first; those already stopping count as stopped.
  for (const std::string& host : hosts_.known()) {
    int extra = -hosts_.slots(host);
    for (const Worker& w : workers_) {
      if (live(w) && w.host == host && w.phase != Phase::kStopping) ++extra;
    }
    for (size_t s = workers_.size(); s-- > 0 && extra > 0;) {
      Worker& w = workers_[s];
      if (!live(w) || w.host != host || w.phase == Phase::kStopping) continue;
      w.phase = Phase::kStopping;
      --extra;
      change.removed_slots.push_back(static_cast<int>(s));
      out.push_back(StopWorker{static_cast<int>(s)});
      out.push_back(SlotLost{static_cast<int>(s)});
    }
  }
  for (const std::string& host : changes.added) {
    out.push_back(Say{"host discovery: host " + host + " is listed with " +
                      std::to_string(hosts_.slots(host)) + " slot(s)"});
  }
  for (const std::string& host : changes.removed) {
    out.push_back(Say{"host discovery: host " + host + " is no longer listed"});
  }
  if (!change.removed_slots.empty()) {
    std::sort(change.removed_slots.begin(), change.removed_slots.end());
    out.push_back(Say{"stopping " + slot_list(change.removed_slots) +
                      " (their hosts are no longer listed)"});
    if (state_ == State::kRunning) state_ = State::kResetting;
  }
  if (!change.added.empty() || !change.removed.empty()) out.push_back(change);
  fill(out, now);
  check_min(out, now);
  return out;
}

Actions ElasticMachine::worker_silent(int slot, const std::string& why,
                                      Clock::time_point /*now*/) {
  Actions out;
  if (slot < 0 || static_cast<size_t>(slot) >= workers_.size()) return out;
  const Worker& w = workers_[static_cast<size_t>(slot)];
  if (!live(w) || w.phase == Phase::kStopping) return out;
  out.push_back(SlotLost{slot});
  out.push_back(StopWorker{slot});
  out.push_back(Say{"rank " + std::to_string(slot) + " on host " + w.host +
                    " stopped responding: " + why + "; killing it to replace it"});
  return out;
}

void ElasticMachine::worker_joined(int slot) {
  if (!starting(slot)) return;
  Worker& w = workers_[static_cast<size_t>(slot)];
  w.phase = Phase::kMember;
  watch_.forget(w.process);  // the heartbeats watch it now
  hosts_.worker_joined(w.host);
}

Actions ElasticMachine::round_formed(int64_t /*round*/, int /*size*/) {
  Actions out;
  formed_once_ = true;
  if (state_ != State::kStarting && state_ != State::kResetting) return out;
  const bool waiting = std::any_of(workers_.begin(), workers_.end(),
                                   [](const Worker& w) { return w.phase == Phase::kStarting; });
  if (waiting) return out;
  state_ = State::kRunning;
  if (lost_since_full_ && live_count() >= limits_.max_np) {
    lost_since_full_ = false;
    out.push_back(Say{"the job is back at full size (" + std::to_string(live_count()) +
                      " workers)"});
  }
  return out;
}

void ElasticMachine::fill(Actions& out, Clock::time_point now) {
  if (finishing() || state_ == State::kFailed || state_ == State::kDone) return;
  const int target = formed_once_ ? limits_.max_np : initial_np_;
  std::vector<int> started;
  std::vector<std::string> placed_on;  // `where`, without duplicates
  std::string where;
  while (live_count() < target) {
    const std::string host = place("", now);
    if (host.empty()) break;
    auto free = std::find_if(workers_.begin(), workers_.end(),
                             [&](const Worker& w) { return !live(w); });
    if (free == workers_.end()) break;
    const int slot = static_cast<int>(free - workers_.begin());
    *free = {host, Phase::kStarting, false, static_cast<int>(free - workers_.begin())};
    out.push_back(StartWorker{slot, host, true});
    started.push_back(slot);
    if (std::find(placed_on.begin(), placed_on.end(), host) == placed_on.end()) {
      placed_on.push_back(host);
      where += (where.empty() ? "" : ", ") + host;
    }
  }
  if (started.empty()) return;
  if (state_ == State::kRunning) state_ = State::kResetting;
  out.push_back(Say{"started " + slot_list(started) + " on host " + where + " (the job grows to " +
                    std::to_string(live_count()) + " workers)"});
}

void ElasticMachine::check_done(Actions& out) {
  if (!finishing() || state_ == State::kFailed || state_ == State::kDone) return;
  // Done once no member runs, nor a worker hvdrun launched at the start
  // (one that never joins a round is waited for: its output is the job's);
  // replacements and new workers still waiting to join are not needed.
  const bool member_runs = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) {
    return w.phase == Phase::kMember || w.phase == Phase::kStopping ||
           (w.phase == Phase::kStarting && w.initial);
  });
  if (member_runs) return;
  state_ = State::kDone;
  out.push_back(EndJob{exit_code::kSuccess, ""});
}

std::string ElasticMachine::missing_hosts(Clock::time_point now) const {
  std::string out;
  for (const std::string& host : hosts_.known()) {
    std::string why = hosts_.why_unusable(host, now);
    if (!why.empty()) out += (out.empty() ? "" : ", ") + why;
  }
  return out.empty() ? "every listed slot is in use" : out;
}

void ElasticMachine::check_min(Actions& out, Clock::time_point now) {
  if (state_ == State::kFailed || state_ == State::kDone || finishing()) return;
  const int live = live_count();
  if (live >= limits_.min_np) {
    below_min_since_.reset();
    next_progress_.reset();
    return;
  }
  const auto& known = hosts_.known();
  const bool all_blacklisted =
      !known.empty() && std::all_of(known.begin(), known.end(), [&](const std::string& h) {
        return hosts_.blacklisted_until(h, now).has_value();
      });
  if (live == 0 && all_blacklisted) {
    fail(out, exit_code::kAgentFailure,
         "every host is blacklisted and no worker is left: " + missing_hosts(now));
    return;
  }
  if (!below_min_since_) below_min_since_ = now;
  const std::string have = "have " + std::to_string(live) + " of min " +
                           std::to_string(limits_.min_np);
  if (now - *below_min_since_ >= limits_.elastic_timeout) {
    fail(out, exit_code::kRendezvousTimeout,
         "fewer workers than --min-np for " + std::to_string(limits_.elastic_timeout.count()) +
             " s (--elastic-timeout): " + have + "; " + missing_hosts(now));
    return;
  }
  if (!next_progress_ || now >= *next_progress_) {
    next_progress_ = now + kProgressEvery;
    const int more = limits_.min_np - live;
    out.push_back(Say{"waiting for " + std::to_string(more) +
                      (more == 1 ? " more worker (" : " more workers (") + have +
                      "): " + missing_hosts(now)});
  }
}

Actions ElasticMachine::tick(Clock::time_point now) {
  Actions out;
  if (state_ == State::kFailed || state_ == State::kDone) return out;
  give_up_overdue(out, now);
  fill(out, now);
  refill_spares(out, now);
  check_min(out, now);
  watch_starters(now);  // those started now are watched from now
  return out;
}

}  // namespace hvd::launcher::elastic

namespace hvd::launcher::elastic {

Actions ElasticMachine::round_waiting(int64_t round, Clock::time_point since,
                                      const std::vector<int>& joined,
                                      const std::vector<int>& missing, Clock::time_point now) {
  Actions out;
  if (state_ == State::kFailed || state_ == State::kDone || finishing()) return out;
  if (now - since < limits_.elastic_timeout) return out;
  auto named = [&](const std::vector<int>& slots) {
    std::string text;
    for (int slot : slots) {
      const std::string host = host_of(slot);
      text += (text.empty() ? "" : ", ") + ("rank " + std::to_string(slot)) +
              (host.empty() ? "" : " on host " + host);
    }
    return text;
  };
  std::string why;
  if (!missing.empty()) {
    why = "it waits for " + named(missing);
  } else {
    std::vector<int> starting_slots;
    for (int slot : live_slots()) {
      if (starting(slot) && std::find(joined.begin(), joined.end(), slot) == joined.end()) {
        starting_slots.push_back(slot);
      }
    }
    why = "it has " + std::to_string(joined.size()) + " of the " +
          std::to_string(limits_.min_np) + " workers of --min-np" +
          (starting_slots.empty() ? "" : "; started but not joined: " + named(starting_slots));
  }
  fail(out, exit_code::kRendezvousTimeout,
       "rendezvous round " + std::to_string(round) + " did not form within " +
           std::to_string(limits_.elastic_timeout.count()) + " s (--elastic-timeout): " + why +
           (joined.empty() ? "" : " (joined: " + named(joined) + ")"));
  return out;
}

// The hot spares (spare_pool.h holds their bookkeeping): promotion into a
// failed worker's slot, keeping --spares alive on the usable hosts, a spare
// that fails before its promotion.

std::string ElasticMachine::promote_into(int slot, const std::string& preferred, Actions& out,
                                         Clock::time_point now) {
  // Only into a host with a free slot (the failed worker's has one now): a
  // slot is where a worker may run (a GPU, say), whoever started it.
  const std::optional<int> spare = spares_.pick(preferred, [&](const std::string& host) {
    return hosts_.usable(host, now) && live_on(host) < hosts_.slots(host);
  });
  if (!spare) return "";
  const std::string host = spares_.host_of(*spare);
  const bool waiting = spares_.waiting(*spare);
  spares_.promote(*spare, slot);
  workers_[static_cast<size_t>(slot)] = {host, Phase::kStarting, false, *spare};
  out.push_back(PromoteSpare{*spare, slot});
  return "promoted spare " + std::to_string(*spare) + " on host " + host + " into rank " +
         std::to_string(slot) + (waiting ? "" : " (it is still starting)");
}

void ElasticMachine::refill_spares(Actions& out, Clock::time_point now) {
  if (spares_stopped_ || finishing() || state_ == State::kFailed || state_ == State::kDone) return;
  std::vector<int> started;
  std::vector<std::string> placed_on;
  while (spares_.live() < spares_.count()) {
    // The fewest spares first; among those, the most free slots (a spare
    // can be promoted only into a host with a free slot: its own when one of
    // its workers fails, any host with room for a lost host's worker).
    std::string host;
    std::pair<int, int> best;
    for (const std::string& h : hosts_.hosts()) {
      if (!hosts_.usable(h, now)) continue;
      const std::pair<int, int> key{spares_.live_on(h), live_on(h) - hosts_.slots(h)};
      if (host.empty() || key < best) {
        host = h;
        best = key;
      }
    }
    if (host.empty()) break;
    const int id = spares_.add(host);
    out.push_back(StartSpare{id, host});
    started.push_back(id);
    if (std::find(placed_on.begin(), placed_on.end(), host) == placed_on.end()) {
      placed_on.push_back(host);
    }
  }
  if (started.empty()) return;
  std::string ids, hosts;
  for (int id : started) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  for (const std::string& h : placed_on) hosts += (hosts.empty() ? "" : ", ") + h;
  out.push_back(Say{std::string(started.size() == 1 ? "started hot spare " : "started hot spares ") +
                    ids + " on host" + (placed_on.size() == 1 ? " " : "s ") + hosts});
}

void ElasticMachine::spare_ready(int spare) {
  spares_.ready(spare);
  watch_.arrived(spare);
}

Actions ElasticMachine::spare_exited(int spare, bool failed, int code, const std::string& what,
                                     Clock::time_point now) {
  Actions out;
  (void)code;
  watch_.forget(spare);
  if (!spares_.gone(spare) || state_ == State::kFailed || state_ == State::kDone || finishing()) {
    return out;
  }
  if (!failed) {
    spares_stopped_ = true;
    out.push_back(Say{what + " before it was promoted (does the script call hvd.init()?); no "
                      "more hot spares are started"});
    return out;
  }
  spare_failed(what, " before it was promoted", out, now);
  return out;
}

void ElasticMachine::spare_failed(const std::string& what, const std::string& detail,
                                  Actions& out, Clock::time_point now) {
  if (resets_ >= limits_.reset_limit) {
    spares_stopped_ = true;
    out.push_back(Say{what + "; no more hot spares are started: the reset limit (" +
                      std::to_string(limits_.reset_limit) + ", --reset-limit) is used up"});
    return;
  }
  ++resets_;
  out.push_back(Say{what + detail + " (reset " + std::to_string(resets_) + " of " +
                    std::to_string(limits_.reset_limit) + ")"});
  refill_spares(out, now);
}

// The watch over the processes that are not in a round yet (process_watch.h;
// docs/elastic.md, "Liveness before the round"): starting workers (a
// promoted spare among them) and hot spares. One that its agent saw stopped
// for the heartbeat timeout, or that has not reached hvd.init()
// --start-timeout after its start, is given up: a worker is killed (its exit
// then gives its slot to the next spare or a fresh process, as for any
// failed worker), a spare is killed and another one started.

void ElasticMachine::worker_arrived(int slot) {
  if (starting(slot)) watch_.arrived(process_of(slot));
}

void ElasticMachine::process_state(int process, bool stopped, Clock::time_point now) {
  watch_.state(process, stopped, now);
}

void ElasticMachine::watch_starters(Clock::time_point now) {
  // The first workers need not arrive: the first round's start timeout ends
  // a job whose first workers do not all come.
  std::map<int, bool> watched;  // process -> must arrive
  for (const Worker& w : workers_) {
    if (w.phase == Phase::kStarting) watched[w.process] = !w.initial;
  }
  for (int spare : spares_.live_ids()) watched[spare] = true;
  watch_.keep_only(watched, now);
}

void ElasticMachine::give_up_overdue(Actions& out, Clock::time_point now) {
  watch_starters(now);
  for (const ProcessWatch::Overdue& late : watch_.overdue(now)) {
    const std::string why =
        late.stopped ? "has been stopped (state T in /proc) for " +
                           std::to_string(late.limit.count()) + " s (--heartbeat-timeout-seconds)"
                     : "has not reached hvd.init() within " + std::to_string(late.limit.count()) +
                           " s (--start-timeout) of its start";
    if (const int slot = slot_of_process(late.process); slot >= 0) {
      const Worker& w = workers_[static_cast<size_t>(slot)];
      const std::string who =
          "rank " + std::to_string(slot) + " on host " + w.host +
          (late.process != slot ? " (promoted spare " + std::to_string(late.process) + ")"
                                : w.initial ? "" : " (a replacement)");
      out.push_back(SlotLost{slot});
      out.push_back(StopWorker{slot});
      out.push_back(Say{who + " " + why + (late.stopped ? " before joining a round" : "") +
                        "; giving it up: killing it to replace it"});
    } else if (spares_.is_spare_id(late.process) && spares_.gone(late.process)) {
      out.push_back(StopSpare{late.process});
      spare_failed("hot spare " + std::to_string(late.process) + " on host " +
                       spares_.host_of(late.process) + " " + why + "; giving it up",
                   ": killing it to start another", out, now);
    }
  }
}

}  // namespace hvd::launcher::elastic
