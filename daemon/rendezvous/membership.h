// The membership barrier of one job: every rank joins, and join() returns
// when all `size` ranks of the current round have joined (or the deadline
// passes), with the world of the round: the layout (local and cross ranks)
// is computed once every rank has reported where it sits. Once a round is complete, a join from a rank that already joined
// it opens the next round (a worker that called shutdown() then init()); the
// barrier then waits for every rank again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
  // (polled every 100 ms), e.g. when the gRPC client went away.
  Result<JoinResult> join(const common::Placement& placement, int64_t pid,
                          std::chrono::milliseconds timeout,
                          const std::function<bool()>& cancelled);

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

  const int size_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t round_ = 0;
  std::vector<bool> joined_;  // in the current round
  std::vector<common::Placement> placed_;  // per rank, as reported in the current round
  std::vector<JoinResult> worlds_;  // per rank, of the last complete round
  int joined_count_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_join_;
  bool closed_ = false;
};

}  // namespace hvd::daemon
