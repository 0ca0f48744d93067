// Which worker of an elastic job holds which commit of its state, and when
// the job lost the last one (docs/elastic.md, "Lost state").
//
// A commit has a job-wide number (python/hvd/elastic.py): every
// State.commit() adds one, and the sync after a reset gives every member of
// the new round the number of the commit it took (that of the member
// holding the highest one; 0, the start, when none holds any). Workers
// report on their heartbeats the number they hold (HeartbeatRequest.commit)
// and the one their round restarted from (round_start), every beat.
//
// The job lost state when a round restarted from a commit below the highest
// one held in the rounds before it: every worker that held it died. Each
// loss is kept once, until take_losses(). Reports of rounds older than the
// last restart reported are stale (a dead worker's last heartbeat still on
// its way) and ignored. One elastic State per worker (as Horovod's run()).
// Thread-safe; pure bookkeeping.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace hvd::daemon {

class CommitLedger {
 public:
  // The worker of `slot`, a member of `round`, holds commit `commit`.
  void held(int slot, int64_t round, int64_t commit);
  // `round` restarted from commit `start`: the sync gave it to its member
  // in `slot` (and to every other member). A loss when an earlier round
  // held a higher commit.
  void restarted(int slot, int64_t round, int64_t start);

  struct Loss {
    int64_t commit = 0;        // the highest commit, held by nobody in the restarted round
    std::vector<int> holders;  // the slots that held it, ascending
    int64_t restart = 0;       // the commit the round restarted from (0: the start)
    int64_t round = 0;         // the round that restarted
  };
  // The losses found since the last call, oldest first.
  std::vector<Loss> take_losses();

  // The highest commit reported since the last restart (-1: none), for
  // diagnostics and tests.
  int64_t highest() const;

 private:
  struct Record {
    int64_t commit = -1;
    std::set<int> holders;  // the slots that reported `commit`
  };
  void record_locked(int slot, int64_t round, int64_t commit);

  mutable std::mutex mu_;
  int64_t floor_ = std::numeric_limits<int64_t>::min();  // older rounds are stale
  std::map<int64_t, Record> rounds_;                      // round -> its highest commit
  std::vector<Loss> losses_;
};

}  // namespace hvd::daemon
