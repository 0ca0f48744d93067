// The membership barrier of one job: every rank joins, and join() returns
// when all `size` ranks of the current round have joined (or the deadline
// passes), with the world of the round: the layout (local and cross ranks)
// is computed once every rank has reported where it sits. Once a round is complete, a join from a rank that already joined
// it opens the next round (a worker that called shutdown() then init()); the
// barrier then waits for every rank again.
#pragma once

#include <chrono>
#include <map>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/rendezvous/blocking_wait.h"
#include "daemon/rendezvous/join_result.h"
#include "common/status.h"

namespace hvd::daemon {

using common::Result;
using common::Status;

class Membership {
 public:
  explicit Membership(int size);

  // `placement`: the rank asked for (-1: the lowest rank not yet joined in
  // this round), the size the worker expects, its host (for messages) and
  // where it sits on it (its local rank and size; its cross rank is the
  // round's to compute).
  // Errors: kInvalidArgument (rank out of range, size differs from the job's),
  // kAlreadyExists (rank joined twice in a round that is not complete),
  // kTimeout naming the ranks still missing, kCancelled after close().
  // A join that fails after it was counted (timeout, cancel) is withdrawn, so
  // the rank can join again.
  Result<JoinResult> join(const common::Placement& placement, int64_t pid,
                          std::chrono::milliseconds timeout);
  // Like join(); also gives up with kCancelled once `cancelled` returns true
  // (polled every 100 ms). Both wait on join_async().
  Result<JoinResult> join(const common::Placement& placement, int64_t pid,
                          std::chrono::milliseconds timeout,
                          const std::function<bool()>& cancelled);

  // A join that holds no thread while it waits (the service's): `done` is
  // called once with what join() would return, on this thread when it can
  // answer at once (0 is returned then: an error, or this join completed
  // the round), else on the thread of the join that completes the round,
  // of close() or of give_up() (with no lock held); a ticket otherwise.
  using JoinDone = std::function<void(Result<JoinResult>)>;
  uint64_t join_async(const common::Placement& placement, int64_t pid, JoinDone done);
  // Ends the waiting join `ticket`, withdrawn (nothing when it ended
  // already): kTimeout "timed out after `waited` ms: ..." naming the
  // missing ranks, or kCancelled.
  using GiveUp = daemon::GiveUp;
  void give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited);

  int size() const { return size_; }
  // Ranks that have not joined the current round, ascending.
  std::vector<int> missing_ranks() const;
  // When the first rank joined round 0; empty until then.
  std::optional<std::chrono::steady_clock::time_point> first_join_time() const;
  // True once every rank has joined the current round.
  bool complete() const;
  int64_t round() const;

  // Wakes every waiting join with kCancelled.
  void close();

 private:
  std::vector<int> missing_ranks_locked() const;
  // The round is complete: every rank's world, from the placements.
  void settle_locked();

  struct Waiting {
    int rank = 0;
    JoinDone done;
  };

  const int size_;
  mutable std::mutex mu_;
  std::map<uint64_t, Waiting> waiting_;  // ticket -> a join waiting for the round
  uint64_t next_ticket_ = 1;
  int64_t round_ = 0;
  std::vector<bool> joined_;  // in the current round
  std::vector<common::Placement> placed_;  // per rank, as reported in the current round
  std::vector<JoinResult> worlds_;  // per rank, of the last complete round
  int joined_count_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_join_;
  bool closed_ = false;
};

}  // namespace hvd::daemon
