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

  Segment& segment_;
  int rank_;
  std::chrono::milliseconds timeout_;
  PeerWatch peers_;
  std::atomic<int> blamed_{-1};  // the peer of the last wait that failed on its account
  int spins_;   // busy polls before yielding
  int yields_;  // sched_yield polls before sleeping
  std::chrono::milliseconds slice_;  // a sleep between looks at the awaited peer
  std::atomic<bool> interrupted_{false};
};

}  // namespace hvd::transports::shm
