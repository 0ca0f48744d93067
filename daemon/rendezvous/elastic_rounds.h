// The rendezvous rounds of an elastic job (docs/elastic.md). Workers are
// known by their slot (the rank hvdrun launched them as; a replacement gets
// its predecessor's slot). A round forms when every member of the last
// round that is still alive has joined it (hvdrun reports the dead with
// lost()) and at least `min_size` workers have. The first round's members
// are the slots hvdrun launched (0..initial_size-1): it forms when every one
// of them that is not lost has joined, so a worker or host lost while the
// job starts never leaves the others waiting for it. Newcomers (a worker that was in no round:
// prev_rank -1) that have joined by then are in it too; one that comes
// later waits for the next round: an ADDED event (daemon/rendezvous/membership_events.h)
// tells the members so that they reset (HostsUpdatedInterrupt) and let it in. Ranks: the members in
// the order of their previous ranks, then the newcomers in arrival order,
// so the oldest worker is rank 0; local ranks by host in rank order, cross
// ranks from those (Horovod's definitions). A promoted hot spare
// (daemon/rendezvous/hot_spares.h) is expected: the forming round waits for it too, up
// to a grace period, so that the survivors and it go on at full size at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/rendezvous/blocking_wait.h"
#include "daemon/rendezvous/join_result.h"
#include "common/status.h"
#include "daemon/rendezvous/membership_events.h"

namespace hvd::daemon {

class ElasticRounds {
 public:
  // `events` (may be null; must outlive this) gets an ADDED event whenever
  // a newcomer waits for a round after the first.
  ElasticRounds(int initial_size, int min_size, MembershipEvents* events = nullptr);

  // Waits (up to `timeout`, or until `cancelled`) for the round this join
  // belongs to; the worker's world in it. kTimeout names the slots still
  // missing; kCancelled after close().
  common::Result<JoinResult> join(int slot, int prev_rank, const std::string& host,
                                  std::chrono::milliseconds timeout,
                                  const std::function<bool()>& cancelled);
  // A join that holds no thread while it waits (the service's): `done` is
  // called once with what join() would return, on this thread when it can
  // answer at once (0 is returned then), else on the thread of the join,
  // lost(), recheck(), close() or give_up() that ends the wait (with no
  // lock held); a ticket otherwise.
  using JoinDone = std::function<void(common::Result<JoinResult>)>;
  uint64_t join_async(int slot, int prev_rank, const std::string& host, JoinDone done);
  // Ends the waiting join `ticket`, withdrawn (nothing when it ended
  // already): kTimeout "timed out after `waited` ms waiting for elastic
  // round N: ..." or kCancelled.
  using GiveUp = daemon::GiveUp;
  void give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited);
  // Forms the round when it waits only for expected workers whose grace
  // has ended (call it when a grace of expect() ends).
  void recheck();
  // The worker of `slot` died: the forming round no longer waits for it.
  void lost(int slot);
  // lost() for each of `slots`: the current round and those of `slots`
  // that were its members (the round may form at once without them).
  struct Removal {
    int64_t round = -1;
    std::vector<int> members;
    std::vector<int> ranks;  // the members' ranks in `round`, in the same order
  };
  Removal lost(const std::vector<int>& slots);
  // When workers wait to join while `slot` is a member of the current round
  // that has not rejoined yet (the members should leave and rejoin): an
  // ADDED change naming them; nullopt otherwise.
  std::optional<MembershipChange> waiting(int slot) const;
  // A new worker (a promoted spare) is about to join in `slot`: the round
  // forming waits for it up to `grace` (then forms without it; it joins the
  // next one; a spare that dies first costs the survivors that wait).
  void expect(int slot, std::chrono::milliseconds grace);
  int64_t round() const;
  // The members of `round` lost since it formed (empty unless it is the
  // current round): a member that starts watching late must still hear it.
  std::vector<int> lost_members(int64_t round) const;
  // The ranks in `round` of its members `slots` (empty unless it is the
  // current round).
  std::vector<int> ranks_in_round(const std::vector<int>& slots, int64_t round) const;
  // The round being formed, when it holds the job up (the first round, or
  // members of the last one have left it to rejoin): since when the first
  // of those waits, who joined, and the slots it still waits for (empty: it
  // waits for --min-np workers). nullopt otherwise (newcomers waiting while
  // the round runs are let in at the members' next commit).
  struct Forming {
    int64_t round = 0;
    std::chrono::steady_clock::time_point since;
    std::vector<int> joined;
    std::vector<int> missing;
  };
  std::optional<Forming> forming() const;
  void close();

 private:
  struct Joiner {
    int slot = 0;
    int prev_rank = -1;
    std::string host;
    int64_t order = 0;
    std::chrono::steady_clock::time_point since;
    uint64_t ticket = 0;
    JoinDone done;  // empty once answered
  };
  using Ready = std::vector<std::pair<JoinDone, common::Result<JoinResult>>>;
  bool member_locked(int slot) const;
  bool ready_locked() const;
  // Forms the round: every joiner's answer goes to `ready`.
  void form_locked(Ready& ready);
  std::vector<int> missing_locked() const;

  const int initial_size_;
  const int min_size_;
  MembershipEvents* const events_;
  mutable std::mutex mu_;
  uint64_t next_ticket_ = 1;
  int64_t round_ = -1;              // the last round formed
  std::vector<int> members_;        // its slots, by rank (before the first: the launched slots)
  std::unordered_map<int, int> member_rank_;  // slot -> its index in members_
  std::set<int> lost_;              // members that died since
  std::vector<Joiner> joining_;     // the round forming
  std::unordered_set<int> joined_slots_;  // their slots
  size_t members_joined_ = 0;  // of them, members of the last round not lost
  int64_t arrivals_ = 0;
  std::map<int, JoinResult> worlds_;  // slot -> world in round_
  std::map<int, std::chrono::steady_clock::time_point> expected_;  // slot -> until when
  bool closed_ = false;
};

}  // namespace hvd::daemon
