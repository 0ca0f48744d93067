#include "launcher/job_monitor.h"

#include <algorithm>

#include "daemon/rendezvous/liveness.h"
#include "daemon/rendezvous/rendezvous_service.h"

namespace hvd::launcher {

std::string_view process_state_name(ProcessState state) {
  switch (state) {
    case ProcessState::kStarting: return "starting";
    case ProcessState::kRunning: return "running";
    case ProcessState::kSpare: return "spare";
    case ProcessState::kStopped: return "stopped";
    case ProcessState::kGone: return "gone";
  }
  return "unknown";
}

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

JobMonitor::JobMonitor(bool elastic, int min_size, int max_size) {
  state_.elastic = elastic;
  state_.min_size = min_size;
  state_.max_size = max_size;
  state_.size = elastic ? 0 : max_size;
}

void JobMonitor::add_event(std::string kind, std::string text) {
  state_.events.push_back({unix_now(), std::move(kind), std::move(text)});
  while (state_.events.size() > kMaxEvents) state_.events.pop_front();
}

void JobMonitor::exited(int process, const std::string& host, int exit_code, int signal,
                        bool expected, bool current) {
  std::lock_guard lock(mu_);
  Tracked& t = tracked_[process];
  t.host = host;
  if (current) {
    t.exited = Clock::now();
    t.stopped = false;
  }
  const std::string who = "rank " + std::to_string(process) + " on " + host;
  if (signal != 0) {
    if (!expected) ++state_.failures["signal"];
    add_event(expected ? "exit" : "failure", who + " killed by signal " + std::to_string(signal));
  } else if (exit_code != 0) {
    if (!expected) ++state_.failures["exit_code"];
    add_event(expected ? "exit" : "failure",
              who + " exited with code " + std::to_string(exit_code));
  } else {
    add_event("exit", who + " exited with code 0");
  }
}

void JobMonitor::state_changed(int process, bool stopped) {
  std::lock_guard lock(mu_);
  tracked_[process].stopped = stopped;
  add_event("stopped", "rank " + std::to_string(process) + (stopped ? " stopped" : " runs again"));
}

void JobMonitor::agent_lost(const std::string& host, const std::string& why) {
  std::lock_guard lock(mu_);
  ++state_.failures["agent_lost"];
  add_event("agent_lost", "agent of " + host + " lost: " + why.substr(0, 200));
}

void JobMonitor::refresh(const std::vector<Placed>& processes, std::vector<Blacklisted> blacklisted,
                         const daemon::RendezvousService& rendezvous, Clock::time_point now) {
  refresh(processes, std::move(blacklisted),
          Rounds{rendezvous.round(), rendezvous.waiting_spares(), rendezvous.promotions()},
          rendezvous.liveness(), now);
}

void JobMonitor::refresh(const std::vector<Placed>& processes, std::vector<Blacklisted> blacklisted,
                         const Rounds& rounds, const daemon::Liveness& liveness,
                         Clock::time_point now) {
  const int64_t round = rounds.round;
  const auto& waiting = rounds.spares_waiting;
  const int64_t promoted = rounds.promotions;
  std::vector<Process> rows;
  int running = 0;
  std::lock_guard lock(mu_);
  for (const Placed& p : processes) {
    Tracked& t = tracked_[p.id];
    t.host = p.host;
    t.spare = p.spare;
    Process row{p.id, p.host, ProcessState::kStarting, std::nullopt};
    const auto quiet = liveness.quiet_for(p.id, now);
    if (quiet) row.heartbeat_age_seconds = std::chrono::duration<double>(*quiet).count();
    // After an exit, only a worker that joined the slot since is a new one.
    const auto since = liveness.watched_since(p.id);
    const bool beats = quiet && since && (!t.exited || *since > *t.exited);
    if (beats) t.exited.reset();
    if (t.stopped) {
      row.state = ProcessState::kStopped;
    } else if (beats) {
      row.state = ProcessState::kRunning;
    } else if (t.exited) {
      row.state = ProcessState::kGone;
    } else if (p.spare) {
      row.state = ProcessState::kSpare;
    }
    if (row.state == ProcessState::kRunning && !p.spare) ++running;
    rows.push_back(std::move(row));
  }
  for (const auto& b : blacklisted) {
    const bool known = std::any_of(state_.blacklisted.begin(), state_.blacklisted.end(),
                                   [&](const Blacklisted& o) { return o.host == b.host; });
    if (!known) {
      add_event("blacklist", "host " + b.host + " blacklisted for " +
                                 std::to_string(static_cast<int64_t>(b.seconds_left)) + " s");
    }
  }
  // (-1 until the first round formed.)
  if (round >= 0 && (!first_round_ || round != state_.round)) {
    if (first_round_) ++state_.resets;
    first_round_ = round;
    add_event("round", "round " + std::to_string(round) + " formed with " +
                           std::to_string(running) + " running ranks");
  }
  if (promoted > state_.spares_promoted) {
    add_event("promotion", std::to_string(promoted - state_.spares_promoted) +
                               " spare(s) promoted into a failed worker's slot");
  }
  state_.spares_promoted = promoted;
  state_.round = std::max<int64_t>(round, 0);
  if (state_.elastic) {
    state_.size = running;
  }
  state_.processes = std::move(rows);
  state_.spares_waiting = waiting;
  state_.blacklisted = std::move(blacklisted);
  state_.uptime_seconds = std::chrono::duration<double>(now - started_).count();
}

JobMonitor::Snapshot JobMonitor::snapshot() const {
  std::lock_guard lock(mu_);
  return state_;
}

}  // namespace hvd::launcher
