// What hvdrun's metrics port shows of the job (docs/metrics.md): each
// process's state (running, starting, spare, stopped, gone), the current
// round, resets, failures by cause, blacklisted hosts and the last events.
// The job session feeds it on its own thread (its events as it handles
// them; refresh() each tick with what only that thread may read: the
// policy's hosts and spares); the metrics server's thread reads
// snapshot(). One mutex; nothing here blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace hvd::daemon {
class Liveness;
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

enum class ProcessState { kStarting, kRunning, kSpare, kStopped, kGone };
std::string_view process_state_name(ProcessState state);

class JobMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxEvents = 50;

  struct Process {
    int id = 0;  // the slot (HVD_RANK); a spare's id is at least --max-np
    std::string host;
    ProcessState state = ProcessState::kStarting;
    std::optional<double> heartbeat_age_seconds;  // while its liveness is watched
  };
  struct Event {
    double unix_seconds = 0;
    // "failure", "round", "blacklist", "agent_lost", "stopped", "exit", "promotion"
    std::string kind;
    std::string text;
  };
  struct Blacklisted {
    std::string host;
    double seconds_left = 0;
  };
  struct Snapshot {
    bool elastic = false;
    int min_size = 0, max_size = 0;  // static jobs: both -np
    int64_t round = 0;
    int size = 0;                    // ranks of the current round (static: -np)
    int64_t resets = 0;              // rounds formed after the first
    std::vector<Process> processes;  // by id
    std::vector<int> spares_waiting;
    int64_t spares_promoted = 0;
    std::vector<Blacklisted> blacklisted;
    std::map<std::string, int64_t> failures;  // by cause: "exit_code", "signal", "agent_lost"
    std::deque<Event> events;                 // oldest first
    double uptime_seconds = 0;
  };

  JobMonitor(bool elastic, int min_size, int max_size);

  // Session thread. A process exited (`expected`: hvdrun was ending the job).
  // `current`: it was its slot's worker still; false for one that a promoted
  // spare already replaced, whose exit is an event but leaves the slot's
  // state to its new worker. The slot shows gone until a worker joins it
  // after the exit: a heartbeat of the dead one that the rendezvous handles
  // after its exit (a busy machine) does not bring it back.
  void exited(int process, const std::string& host, int exit_code, int signal, bool expected,
              bool current = true);
  void state_changed(int process, bool stopped);
  void agent_lost(const std::string& host, const std::string& why);
  // Each tick: the job's slots and where they run (spares included, with
  // `spare` set), the blacklisted hosts, and the rendezvous (thread-safe).
  struct Placed {
    int id = 0;
    std::string host;
    bool spare = false;
  };
  void refresh(const std::vector<Placed>& processes, std::vector<Blacklisted> blacklisted,
               const daemon::RendezvousService& rendezvous, Clock::time_point now);
  // The same with the rendezvous's facts given one by one.
  struct Rounds {
    int64_t round = -1;  // -1: no round formed yet
    std::vector<int> spares_waiting;
    int64_t promotions = 0;
  };
  void refresh(const std::vector<Placed>& processes, std::vector<Blacklisted> blacklisted,
               const Rounds& rounds, const daemon::Liveness& liveness, Clock::time_point now);

  // Any thread.
  Snapshot snapshot() const;

 private:
  struct Tracked {
    std::string host;
    bool spare = false;
    bool stopped = false;
    std::optional<Clock::time_point> exited;  // since its last worker exited
    bool seen_running = false;
  };
  void add_event(std::string kind, std::string text);  // mu_ held

  mutable std::mutex mu_;
  const Clock::time_point started_ = Clock::now();
  Snapshot state_;
  std::map<int, Tracked> tracked_;
  std::optional<int64_t> first_round_;  // set once a round was seen
};

}  // namespace hvd::launcher
