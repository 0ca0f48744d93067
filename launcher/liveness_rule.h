// When a worker whose heartbeats are late is dead, for static and elastic
// jobs alike (docs/elastic.md, "Liveness"). hvdrun has two views of a
// worker: its application heartbeats (daemon/rendezvous/liveness.h) and its
// agent's view of the process, sampled from /proc every 500 ms and streamed
// on the agent's Watch stream (WorkerStateChanged; the stream carries HTTP/2
// keepalives, so a lost agent ends it and the job session reports the agent
// lost instead: while the stream lives, the agent's last word is fresh).
//
// A late heartbeat (quiet longer than the heartbeat timeout) is
//  - a death verdict when the agent saw the process stopped (state T) and it
//    has stayed stopped for the heartbeat timeout;
//  - a death verdict when the silence exceeds the hung limit, hung_multiple
//    times the heartbeat timeout, whatever the agent says (a process that
//    runs but never beats: a hung heartbeat thread, a livelock);
//  - otherwise a warning, once per episode (until the worker beats again):
//    the process runs, it is starved of CPU or swaps, it is not dead.
// When more than half of the watched workers (4 or more) are late at once,
// that says more about hvdrun than about them: its rendezvous service or its
// host is starved (hvdrun -np 1024 on 2 cores), the heartbeats wait unserved.
// The hung limit is then kCrowdMultiple times longer (a stopped process is
// still dead after the heartbeat timeout, an exit or a lost agent still
// counts at once).
// A gone process is an exit (WorkerExited), never judged here. Pure
// bookkeeping keyed by launch rank (process); the caller supplies the clock.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hvd::config {
class Settings;
} // namespace hvd::config

namespace hvd::launcher {

class LivenessRule {
public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::chrono::seconds timeout{5}; // the heartbeat timeout; 0: never judge
    int hung_multiple = 10; // the hung limit is timeout * hung_multiple
  };

  struct Finding {
    int process = 0;
    bool dead = false; // false: a warning (late but running)
    Clock::duration quiet{};
    // "no heartbeat for 5 s (its process is stopped, state T)", "no heartbeat
    // for 6.2 s, but its process runs (starved of CPU?); ..."
    std::string text;
  };

  explicit LivenessRule(Limits limits) : limits_(limits) {}

  // The agent saw `process` stopped (state T) or running again at `now`.
  void process_state(int process, bool stopped, Clock::time_point now);
  // The process is gone or replaced: forget what the agent said of it.
  void forget(int process);

  // The heartbeat silence of each watched process whose last heartbeat is
  // older than the timeout, at `now`. Returns the deaths and the warnings to
  // print (each late episode warned once); a process not in `late` any more
  // starts a new episode next time.
  struct Late {
    int process = 0;
    Clock::duration quiet{};
  };
  // `watched`: how many workers' heartbeats are watched (0: unknown, no
  // crowd rule).
  std::vector<Finding> review(const std::vector<Late> &late,
                              Clock::time_point now, size_t watched = 0);

  static constexpr int kCrowdMultiple = 3;

  // The lines hvdrun prints for one review's warnings, given who each is
  // ("rank 3 on host h1") and its finding: one line each, or, past a few,
  // one line that counts them (thousands of starved ranks, one line a tick).
  static std::vector<std::string>
  warning_lines(const std::vector<std::pair<std::string, Finding>> &warnings);
  // The same for deaths, as one message: each death, or past a few, the
  // first few, a count and one finding's text (the same for all in a crowd).
  static std::string
  death_message(const std::vector<std::pair<std::string, Finding>> &deaths);

  std::chrono::seconds timeout() const { return limits_.timeout; }
  std::chrono::seconds hung_limit() const {
    return limits_.timeout * limits_.hung_multiple;
  }

private:
  Limits limits_;
  std::map<int, Clock::time_point>
      stopped_since_;          // processes the agent sees stopped
  std::map<int, bool> warned_; // late processes, warned yet
};

// heartbeat_timeout_seconds and heartbeat_hung_multiple.
LivenessRule::Limits liveness_limits(const config::Settings &settings);

} // namespace hvd::launcher
