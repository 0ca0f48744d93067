// The rendezvous rounds of a job: the one round algorithm of static and
// elastic jobs (docs/elastic.md; docs/architecture.md, "Rendezvous"). A
// static job is an elastic one whose size cannot change (Rules::fixed_size).
//
// Workers are known by their slot (the rank hvdrun launched them as; a
// replacement gets its predecessor's slot). A round forms when every member
// of the last round that is still alive has joined it (hvdrun reports the
// dead with lost()) and at least `min_size` workers have. The first round's
// members are the slots hvdrun launched (0..initial_size-1): it forms when
// every one of them that is not lost has joined, so a worker or host lost
// while the job starts never leaves the others waiting for it. Once a round
// has formed, a member's next join opens the next one (a worker that called
// shutdown() then init(), or reset after a membership change). Rounds are
// numbered from 0; round() is -1 before the first forms.
//
// Newcomers (a worker that was in no round: prev_rank -1) that have joined
// by then are in it too; one that comes later waits for the next round: an
// ADDED event (daemon/rendezvous/membership_events.h) tells the members so
// that they reset (HostsUpdatedInterrupt) and let it in. Ranks: the members
// in the order of their previous ranks, then the newcomers in arrival order,
// so the oldest worker is rank 0; local ranks by host in rank order, cross
// ranks from those (Horovod's definitions). A promoted hot spare
// (daemon/rendezvous/hot_spares.h) is expected: the forming round waits for
// it too, up to a grace period, so that the survivors and it go on at full
// size at once.
//
// A job of a fixed size is the same algorithm with initial = min = slots,
// where the world never changes, so that what the launcher said stays
// true: a worker's rank is its slot (its previous rank; no newcomers), it
// keeps the local rank and size it reported, it must expect the job's size,
// and slot -1 asks for the lowest slot not joined yet (a foreign launcher's
// worker that knows no rank).
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

#include "common/placement.h"
#include "common/status.h"
#include "daemon/rendezvous/blocking_wait.h"
#include "daemon/rendezvous/join_result.h"
#include "daemon/rendezvous/membership_events.h"

namespace hvd::daemon {

class Rounds {
 public:
  // How the job's rounds form.
  struct Rules {
    int initial_size = 0;  // the slots launched (0..initial_size-1): the first round's members
    int min_size = 1;      // a round forms with at least this many workers
    int slots = 0;         // a worker's slot is below it (at least initial_size)
    bool fixed = false;    // the size cannot change (see above)

    // A static job of `size` workers (-np).
    static Rules fixed_size(int size);
    // An elastic job: -np, --min-np, --max-np (0: -np).
    static Rules elastic(int initial_size, int min_size, int slots = 0);
  };

  // `events` (may be null; must outlive this) gets an ADDED event whenever
  // a newcomer waits for a round after the first.
  explicit Rounds(Rules rules, MembershipEvents* events = nullptr);

  // A worker's join: `placement.rank` its slot (-1 in a fixed-size job: the
  // lowest slot not joined yet), `placement.size` the size it expects, its
  // host and where it sits on it; its rank in the last round it was in
  // (-1: a new worker) and its pid (for messages).
  struct Request {
    common::Placement placement;
    int prev_rank = -1;
    int64_t pid = 0;
  };

  // Waits (up to `timeout`, or until `cancelled`, polled every 100 ms) for
  // the round this join belongs to; the worker's world in it. Errors:
  // kInvalidArgument (slot out of range; fixed size: another size, a local
  // rank outside its local size), kAlreadyExists (the slot joined the
  // forming round already), kTimeout naming the slots still missing,
  // kCancelled after close(). A join that fails after it was counted
  // (timeout, cancel) is withdrawn, so the slot can join again.
  common::Result<JoinResult> join(const Request& request, std::chrono::milliseconds timeout,
                                  const std::function<bool()>& cancelled = nullptr);
  // A join that holds no thread while it waits (the service's): `done` is
  // called once with what join() would return, on this thread when it can
  // answer at once (0 is returned then), else on the thread of the join,
  // lost(), recheck(), close() or give_up() that ends the wait (with no
  // lock held); a ticket otherwise.
  using JoinDone = std::function<void(common::Result<JoinResult>)>;
  uint64_t join_async(const Request& request, JoinDone done);
  // Ends the waiting join `ticket`, withdrawn (nothing when it ended
  // already): kTimeout "timed out after `waited` ms: ..." naming what it
  // waited for, or kCancelled.
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

  const Rules& rules() const { return rules_; }
  // The last round formed; -1 before the first.
  int64_t round() const;
  // The slots the round being formed still waits for (the members of the
  // last round, or the launched slots, not lost and not joined yet; the
  // expected spares), ascending but for expected spares first.
  std::vector<int> missing() const;
  // When the first worker joined the first round; empty until then (kept
  // when that join is withdrawn: hvdrun's start timeout counts from it).
  std::optional<std::chrono::steady_clock::time_point> first_join_time() const;
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
  // Wakes every waiting join with kCancelled; later joins get it too.
  void close();

 private:
  struct Joiner {
    int slot = 0;
    int prev_rank = -1;
    common::Placement placement;
    int64_t order = 0;
    std::chrono::steady_clock::time_point since;
    uint64_t ticket = 0;
    JoinDone done;  // empty once answered
  };
  using Ready = std::vector<std::pair<JoinDone, common::Result<JoinResult>>>;
  // Why a join cannot be taken as it is (nullopt: it can).
  std::optional<common::Status> refusal(const Request& request) const;
  // "rank 3" in a fixed-size job (rank = slot), "slot 3" otherwise.
  std::string name_of(int slot) const;
  // The lowest slot of the job not joining the forming round.
  int free_slot_locked() const;
  bool member_locked(int slot) const;
  bool ready_locked() const;
  // Forms the round: every joiner's answer goes to `ready`.
  void form_locked(Ready& ready);
  // Every rank's world in the round formed from `order`.
  std::vector<JoinResult> worlds_of(const std::vector<Joiner>& order) const;
  std::vector<int> missing_locked() const;
  // Why the join timing out waited: what is missing.
  std::string waited_for_locked() const;

  const Rules rules_;
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
  std::optional<std::chrono::steady_clock::time_point> first_join_;
  bool closed_ = false;
};

}  // namespace hvd::daemon
