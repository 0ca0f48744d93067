// The state machine of an elastic job (docs/elastic.md), pure logic: the
// elastic policy (elastic_policy.h) feeds it what happens — worker exits,
// lost agents, discovery results, silent workers, joins and rounds, the
// clock — and carries out the actions it returns. States:
//
//   starting  --first round formed-->          running
//   running   --a worker failed / hosts
//               changed / workers added-->     resetting
//   resetting --a round of every live worker-> running
//   any       --a member finished and the
//               rest is done-->                done
//   any       --reset limit, below --min-np
//               past --elastic-timeout, every
//               host blacklisted-->            failed
//
// Workers are known by their slot (HVD_RANK; below --max-np): a failed
// worker's slot is started again on its host when that host is usable
// (listed, not blacklisted; host_table.h), else on another usable host
// with a free slot; each such replacement counts against --reset-limit.
// Once the first round formed the job fills the usable hosts' slots up to
// --max-np (new hosts grow it). A host that the list no longer names has its
// workers stopped (not counted as failures). Below --min-np live workers a
// progress line says what is missing every kProgressEvery; past
// --elastic-timeout the job fails naming it. Hot spares (--spares K;
// spare_pool.h) are kept at K on the usable hosts (fewest spares first);
// a failed or lost worker's slot goes to a spare on a usable host with a
// free slot when there is one (one waiting in hvd.init() first, on the
// worker's host first) rather than to a new process, and a new spare is
// started in its place. A spare that
// fails costs a reset like a worker; past --reset-limit no more are started.
// A process not in a round yet — a starting worker, a promoted spare, a spare — that its agent saw
// stopped for the heartbeat timeout, or that has not reached hvd.init()
// --start-timeout after its start (the first workers excepted: the first
// round's start timeout covers them), is given up: killed, its slot to the
// next spare or a fresh process, a spare started again (process_watch.h).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/elastic/host_table.h"
#include "launcher/elastic/process_watch.h"
#include "launcher/elastic/spare_pool.h"

namespace hvd::launcher::elastic {

inline constexpr std::chrono::seconds kProgressEvery{5};

enum class State { kStarting, kRunning, kResetting, kFailed, kDone };
const char* state_name(State state);

struct Limits {
  int min_np = 1;
  int max_np = 1;
  int reset_limit = 10;
  std::chrono::seconds elastic_timeout{600};
  int spares = 0;  // --spares
  // A process not in a round yet that is stopped this long is given up
  // (--heartbeat-timeout-seconds); 0: never.
  std::chrono::seconds stopped_timeout{0};
  // A replacement, growth worker or spare that has not reached hvd.init()
  // this long after its start is given up (--start-timeout); 0: never.
  std::chrono::seconds start_timeout{0};
};

// Start a worker in `slot` on `host`; `replacement`: it is not in the first
// round (HVD_REPLACEMENT=1: it joins as a new worker).
struct StartWorker {
  int slot = 0;
  std::string host;
  bool replacement = true;
};
// Stop the worker of `slot` (SIGKILL through its agent); its exit is expected.
struct StopWorker {
  int slot = 0;
};
// Stop hot spare `spare` (SIGKILL through its agent); its exit is expected.
struct StopSpare {
  int spare = 0;
};
// Start hot spare `spare` (its launch rank; HVD_SPARE) on `host`.
struct StartSpare {
  int spare = 0;
  std::string host;
};
// Promote hot spare `spare` into `slot` (the rendezvous tells it; the
// forming round waits for it). Comes before the SlotLost of the slot's
// failed worker, so that the survivors' next round includes the spare.
struct PromoteSpare {
  int spare = 0;
  int slot = 0;
};
// Tell the rendezvous the worker of `slot` is gone (the forming round does
// not wait for it; its liveness is no longer watched).
struct SlotLost {
  int slot = 0;
};
// Tell the workers the hosts changed (membership watch).
struct HostsChanged {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<int> removed_slots;
};
// A line for the user (hvdrun prints "hvdrun: " + text).
struct Say {
  std::string text;
};
// The job ends: `error` empty for success, else the one-line reason.
struct EndJob {
  int code = 0;
  std::string error;
};
using Action = std::variant<StartWorker, StartSpare, PromoteSpare, StopWorker, StopSpare,
                            SlotLost, HostsChanged, Say, EndJob>;
using Actions = std::vector<Action>;

class ElasticMachine {
 public:
  // `initial`: slot -> host of the workers hvdrun launched (slots 0..np-1).
  ElasticMachine(Limits limits, HostTable hosts, const std::vector<std::string>& initial,
                 Clock::time_point now);

  // A worker exited. `failed`: non-zero code or a signal; `code` hvdrun's
  // exit code for it; `what`: "rank 1 on host h2 was killed by signal 9 (SIGKILL)".
  Actions worker_exited(int slot, bool failed, int code, const std::string& what,
                        Clock::time_point now);
  // A worker could not be started: its host counts as lost.
  Actions start_failed(int slot, const std::string& why, Clock::time_point now);
  // The agent serving `hosts` is lost: their workers are gone.
  Actions agent_lost(const std::vector<std::string>& hosts, const std::string& why,
                     Clock::time_point now);
  // The discovery script printed this list.
  Actions hosts_discovered(const std::vector<HostSlots>& hosts, Clock::time_point now);
  // Hot spare `spare` reached hvd.init() and waits there.
  void spare_ready(int spare);
  // A hot spare that was not promoted exited (`failed`, `code`, `what` as
  // for worker_exited).
  Actions spare_exited(int spare, bool failed, int code, const std::string& what,
                       Clock::time_point now);
  // A joined worker is dead by the liveness rule (launcher/liveness_rule.h):
  // `why` says so ("no heartbeat for 5.4 s (its process is stopped)").
  Actions worker_silent(int slot, const std::string& why, Clock::time_point now);
  // The worker of `slot` is in a round now.
  void worker_joined(int slot);
  // The starting worker of `slot` reached the rendezvous (its Join came).
  void worker_arrived(int slot);
  // Process `process` (a launch rank: a worker's or a spare's) was seen
  // stopped, or running again, by its agent.
  void process_state(int process, bool stopped, Clock::time_point now);
  // A round formed with `size` workers. Says when the job is back at
  // --max-np workers after losing some.
  Actions round_formed(int64_t round, int size);
  // Time passed: cooldowns end, growth, the elastic timeout, progress
  // lines, processes given up (stopped, or not arrived in time).
  Actions tick(Clock::time_point now);
  // The rendezvous round `round` has been forming since `since` (workers
  // wait in its Join): `joined` have joined, it waits for `missing` (empty:
  // for --min-np workers). Past --elastic-timeout the job ends (exit 124)
  // naming who is missing: no worker waits for a round forever.
  Actions round_waiting(int64_t round, Clock::time_point since, const std::vector<int>& joined,
                        const std::vector<int>& missing, Clock::time_point now);

  State state() const { return state_; }
  int resets() const { return resets_; }
  // Slots with a live worker (starting or member), ascending.
  std::vector<int> live_slots() const;
  // The host of a slot's current (or last) worker, or of a spare (by its
  // id); empty when never used.
  std::string host_of(int slot) const;
  // Processes are known to agents by their launch rank: a worker's is its
  // slot, a spare's its id, kept when it is promoted. The slot whose
  // current worker is process `process` (-1: none, e.g. a spare); and the
  // process of a slot's current worker.
  int slot_of_process(int process) const;
  int process_of(int slot) const;
  bool is_spare_process(int process) const { return spares_.is_spare_id(process); }
  // The live spares (not promoted), ascending.
  std::vector<int> live_spares() const { return spares_.live_ids(); }
  bool starting(int slot) const;  // started, not in a round yet
  const HostTable& host_table() const { return hosts_; }

 private:
  enum class Phase { kStarting, kMember, kStopping, kGone, kFinished };
  struct Worker {
    std::string host;
    Phase phase = Phase::kGone;
    bool initial = false;  // launched at the start (not a replacement or growth)
    int process = -1;      // its launch rank: the slot, or the promoted spare's id
  };
  bool live(const Worker& w) const {
    return w.phase == Phase::kStarting || w.phase == Phase::kMember || w.phase == Phase::kStopping;
  }
  int live_count() const;
  int live_on(const std::string& host) const;
  bool finishing() const;
  // A usable host with a free slot, `preferred` first; empty when none.
  std::string place(const std::string& preferred, Clock::time_point now) const;
  void fill(Actions& out, Clock::time_point now);
  void replace(int slot, const std::string& what, int code, Actions& out, Clock::time_point now);
  // Puts a live spare on a usable host with a free slot into `slot`
  // (PromoteSpare); the Say text, or empty when there is none.
  std::string promote_into(int slot, const std::string& preferred, Actions& out,
                           Clock::time_point now);
  // Starts spares until --spares are alive (on the usable hosts with the
  // fewest spares).
  void refill_spares(Actions& out, Clock::time_point now);
  // A spare failed before its promotion (`what` says how, `detail` follows
  // it when another one starts): a reset, and another one starts; past
  // --reset-limit no more spares start.
  void spare_failed(const std::string& what, const std::string& detail, Actions& out,
                    Clock::time_point now);
  // Watches the processes not in a round yet: new ones from `now` (a tick
  // after their start at most), the others no more (process_watch.h).
  void watch_starters(Clock::time_point now);
  // Gives up (kills) those overdue: stopped too long, or not arrived in time.
  void give_up_overdue(Actions& out, Clock::time_point now);
  void check_done(Actions& out);
  void check_min(Actions& out, Clock::time_point now);
  std::string missing_hosts(Clock::time_point now) const;
  void fail(Actions& out, int code, std::string error);

  const Limits limits_;
  HostTable hosts_;
  std::vector<Worker> workers_;  // by slot, size max_np
  SparePool spares_;
  ProcessWatch watch_;  // the processes not in a round yet
  bool spares_stopped_ = false;  // a spare failed past --reset-limit: no more
  const int initial_np_;
  State state_ = State::kStarting;
  int resets_ = 0;
  bool formed_once_ = false;
  bool lost_since_full_ = false;  // a worker was lost since the job last ran at --max-np
  std::optional<Clock::time_point> below_min_since_;
  std::optional<Clock::time_point> next_progress_;
};

}  // namespace hvd::launcher::elastic
