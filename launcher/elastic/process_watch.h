// What hvdrun knows of the processes of an elastic job that are not in a
// round yet — workers starting (the first ones, replacements, growth, a
// promoted hot spare) and hot spares — so that none holds the job up for
// good (docs/elastic.md, "Liveness before the round"). A process is overdue
//  - when its agent saw it stopped (state T in /proc: SIGSTOP, a debugger)
//    and it has stayed stopped for `stopped` (--heartbeat-timeout-seconds);
//  - when it must arrive (reach the rendezvous in hvd.init()) and has not,
//    `start` (--start-timeout) after it started.
// A process that runs, however slowly, is never overdue before `start`. Each
// overdue process is reported once. Processes are known by their launch
// rank (a worker's slot, a spare's id). Pure bookkeeping: the caller
// supplies the clock; not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <vector>

namespace hvd::launcher::elastic {

class ProcessWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    std::chrono::seconds stopped{0};  // 0: stopped processes are not given up
    std::chrono::seconds start{0};    // 0: no start deadline
  };

  explicit ProcessWatch(Limits limits) : limits_(limits) {}

  // The processes to watch now (process -> whether it must arrive): new ones
  // are watched from `now` (their start), the others are forgotten.
  void keep_only(const std::map<int, bool>& processes, Clock::time_point now);
  // The process reached the rendezvous (hvd.init()): no start deadline.
  void arrived(int process);
  // Its agent saw it stopped, or running again.
  void state(int process, bool stopped, Clock::time_point now);
  // It exited or joined a round: a later process of that rank starts afresh.
  void forget(int process) { watched_.erase(process); }

  struct Overdue {
    int process = 0;
    bool stopped = false;           // else: it did not arrive in time
    std::chrono::seconds limit{0};  // the limit it passed
  };
  // The processes overdue now, each once (until forgotten).
  std::vector<Overdue> overdue(Clock::time_point now);

 private:
  struct Watched {
    Clock::time_point started;
    bool must_arrive = false;
    bool arrived = false;
    std::optional<Clock::time_point> stopped_since;
    bool reported = false;
  };

  const Limits limits_;
  std::map<int, Watched> watched_;
};

}  // namespace hvd::launcher::elastic
