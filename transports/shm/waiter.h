// How ranks of a segment wait for each other: each rank publishes progress
// counters in its slot (see segment.h); a waiter spins briefly (pause), then
// yields, then sleeps on the awaited rank's bell (its slot's) with
// FUTEX_WAIT in slices. A publisher bumps its own bell and wakes it only
// when someone sleeps on it, so the fast path is one store and one load,
// and a rank's progress wakes only the ranks waiting for it (one bell for
// the whole segment woke every sleeper at every step: N^2 wake-ups a
// collective, load 1300 at 1024 ranks on 2 cores).
//
// Lost wake-ups cannot happen: a sleeper counts itself in the bell's
// `sleepers` and re-reads the counter before it sleeps on the bell value
// read before that; a publisher stores the counter before it reads
// `sleepers` (all seq_cst).
//
// Every wait ends: with OK, with kAborted when interrupt() was called (from
// any thread; it rings every bell), with kUnavailable naming the peer when a
// peer left (leave() rings every bell) or died (looked at every slice: 10 ms,
// longer when ranks outnumber cores, up to 200 ms), or with kTimeout naming
// the awaited peer and its process state once the transport timeout passed.
// When ranks outnumber cores, waiters skip the busy spin (they would only
// take the time the awaited rank needs), yield twice and sleep.
//
// Crowded segments (the creator's verdict in the header) also count each
// counter's publications at a tally (segment.h Tally): await_all() sleeps
// once on the tally's bell, which the last rank to publish the round's
// value rings, instead of on each late peer in turn. Waiting for each peer
// in turn woke every waiter once per peer: N^2 wake-ups per round (1024
// ranks on 2 cores: ~1M per allgather round, the job starved its own
// heartbeats). The per-rank counters stay the truth: the tally only says
// when to look at them again, and a tally that a later round took over
// (broadcast rounds post on the root only) falls back to the per-peer wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "transports/shm/peer_watch.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {

enum class Counter { kPosted, kReduced, kConsumed };

class Waiter {
 public:
  Waiter(Segment& segment, int rank, std::chrono::milliseconds timeout);

  // Sets this rank's `counter` to `value` and wakes whoever sleeps.
  void publish(Counter counter, uint64_t value);
  // Waits until rank `peer`'s `counter` is at least `target`.
  common::Status await(Counter counter, int peer, uint64_t target);
  // Waits until every rank's `counter` is at least `target`.
  common::Status await_all(Counter counter, uint64_t target);
  // Whether ranks of this segment outnumber the cores (its creator's
  // verdict): then waiting for a whole round with await_all() before reading
  // every peer costs one wake-up, waiting for each peer in turn up to N.
  bool crowded() const { return tallied_; }

  // The failure to report when talking to `peer` failed outside a wait
  // (`what`, say a cross-memory read, with the errno text): what the peer
  // watch says of the peer when it is gone, else kUnavailable with `what`
  // and the peer's process state.
  common::Status peer_failure(int peer, const std::string& what);

  // Makes every wait, current and later, return kAborted. Any thread.
  void interrupt();
  bool interrupted() const { return interrupted_.load(std::memory_order_acquire); }
  // Marks this rank left (peers' waits fail naming it and, with `code`, the
  // peer whose failure ended the last failed wait, if any) and wakes
  // everyone. Any thread; idempotent.
  void leave(common::StatusCode code = common::StatusCode::kUnavailable);
  // Wakes every sleeper of the segment (every bell).
  void ring();

 private:
  uint64_t load(Counter counter, int peer) const;
  common::Status sleep_until(Counter counter, int peer, uint64_t target);
  // Counts this rank's publication of `value` at the counter's tally; rings
  // it when the count is complete or a newer value replaced an incomplete one.
  void tally(Counter counter, uint64_t value);
  // await_all() of a crowded segment.
  common::Status await_tally(Counter counter, uint64_t target);

  Segment& segment_;
  int rank_;
  std::chrono::milliseconds timeout_;
  PeerWatch peers_;
  std::atomic<int> blamed_{-1};  // the peer of the last wait that failed on its account
  int spins_;   // busy polls before yielding
  int yields_;  // sched_yield polls before sleeping
  std::chrono::milliseconds slice_;  // a sleep between looks at the awaited peer
  bool tallied_;                     // the header says crowded: publications are tallied
  std::atomic<bool> interrupted_{false};
};

}  // namespace hvd::transports::shm
