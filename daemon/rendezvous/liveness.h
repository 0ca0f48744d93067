// Which joined ranks of a job still answer: every worker sends a heartbeat
// to the job's Rendezvous service about once a second (daemon/rendezvous/heartbeat.h);
// a rank that has joined and not left, whose last sign of life is older than
// the heartbeat timeout, is silent — its process is stopped (SIGSTOP), its
// host hangs or is unreachable. hvdrun asks silent() and ends the job
// naming the rank (launcher/static_policy.cc); elastic jobs drop it.
//
// A rank is watched from the moment its Join returns (the whole world has
// joined) until it leaves (hvd_shutdown sends a last heartbeat that says
// so), so time spent waiting in the join barrier or after shutdown never
// counts. It also remembers which ranks' Join has come (arrived(): the
// worker reached hvd.init(), whether or not its round formed yet), so that
// hvdrun can tell a starting worker that is slow to arrive from one that
// waits for its round. Thread-safe; pure bookkeeping, the caller supplies
// the clock.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

namespace hvd::daemon {

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  // Ranks 0..size-1 to begin with; joined() adds higher ones (elastic
  // slots), below kMaxRanks.
  explicit Liveness(int size);
  static constexpr int kMaxRanks = 1 << 16;

  // The rank's Join returned: watch it, alive now.
  void joined(int rank, Clock::time_point now);
  // A heartbeat: alive now (ignored for a rank that is not watched).
  void beat(int rank, Clock::time_point now);
  // The rank left (shutdown), or its worker is gone: no longer watched
  // until it joins again; not arrived.
  void left(int rank);
  // The rank's Join came (before it returns).
  void arrived(int rank);
  // Its Join came since it last left.
  bool has_arrived(int rank) const;

  // Watched ranks not heard of for longer than `timeout`, ascending.
  std::vector<int> silent(std::chrono::milliseconds timeout, Clock::time_point now) const;
  // How long ago the rank was last heard of; none when it is not watched.
  std::optional<Clock::duration> quiet_for(int rank, Clock::time_point now) const;
  // When the rank's current watch began (its last Join returned); none when
  // it is not watched. A worker that replaced a dead one in its slot joined
  // after the death; a late heartbeat of the dead one does not move this.
  std::optional<Clock::time_point> watched_since(int rank) const;

 private:
  bool valid(int rank) const { return rank >= 0 && static_cast<size_t>(rank) < last_.size(); }
  void grow(int rank);  // makes `rank` valid (below kMaxRanks)

  mutable std::mutex mu_;
  std::vector<std::optional<Clock::time_point>> last_;  // empty: not watched
  std::vector<Clock::time_point> since_;                // same size; valid while watched
  std::vector<bool> arrived_;                           // same size as last_
};

}  // namespace hvd::daemon
