#include "transports/shm/waiter.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "common/scaled_timeout.h"
#include "transports/shm/futex.h"
#include "transports/shm/usable_cpus.h"

namespace hvd::transports::shm {

namespace {

using Clock = std::chrono::steady_clock;
// Between looks at the awaited peer (whether it died: a dead process rings
// no bell). Ranks that outnumber the cores look less often: each look is a
// wake-up that takes a core from the ranks that make progress.
constexpr auto kSlice = std::chrono::milliseconds(10);
constexpr auto kCrowdedSliceMax = std::chrono::milliseconds(200);

Tally& tally_of(Segment& segment, Counter counter) {
  return segment.header().tallies[static_cast<int>(counter)];
}

constexpr uint64_t kCountMask = (uint64_t{1} << kTallyCountBits) - 1;

uint64_t RankSlot::*member(Counter counter) {
  switch (counter) {
    case Counter::kPosted: return &RankSlot::posted;
    case Counter::kReduced: return &RankSlot::reduced;
    case Counter::kConsumed: return &RankSlot::consumed;
  }
  return &RankSlot::posted;
}

void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace

// A collective waits for every rank of the host in turn: on a crowded host
// each needs its share of the CPU first, so the wait grows with the ranks as
// the attach's does (common/scaled_timeout.h; 1024 ranks on 2 cores took
// longer than 30 s for one allreduce).
Waiter::Waiter(Segment& segment, int rank, std::chrono::milliseconds timeout)
    : segment_(segment),
      rank_(rank),
      timeout_(common::scaled_timeout(timeout, segment.size())),
      peers_(segment, rank) {
  const int cores = usable_cpus();
  bool crowded = segment.size() > cores;
  // Crowded: a yielding waiter stays runnable and takes turns from the
  // ranks it waits for (886 of 1024 engine threads runnable at once, load
  // 1000+ on 2 cores): a couple of yields, then sleep.
  spins_ = crowded ? 0 : 4000;
  yields_ = crowded ? 2 : 16;
  slice_ = crowded ? std::min<std::chrono::milliseconds>(kSlice * (segment.size() / cores),
                                                         kCrowdedSliceMax)
                   : kSlice;
  tallied_ = std::atomic_ref<uint32_t>(segment.header().crowded).load(std::memory_order_relaxed) != 0;
}

uint64_t Waiter::load(Counter counter, int peer) const {
  return std::atomic_ref<uint64_t>(segment_.slot(peer).*member(counter)).load(std::memory_order_seq_cst);
}

namespace {

void ring_bell(uint32_t& bell) {
  std::atomic_ref<uint32_t>(bell).fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&bell);
}

}  // namespace

void Waiter::ring() {
  ring_bell(segment_.header().bell);
  for (Tally& t : segment_.header().tallies) ring_bell(t.bell);
  for (int r = 0; r < segment_.size(); ++r) ring_bell(segment_.slot(r).bell);
}

void Waiter::publish(Counter counter, uint64_t value) {
  RankSlot& mine = segment_.slot(rank_);
  std::atomic_ref<uint64_t>(mine.*member(counter)).store(value, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(mine.sleepers).load(std::memory_order_seq_cst) != 0) {
    ring_bell(mine.bell);
  }
  if (tallied_) tally(counter, value);
}

void Waiter::tally(Counter counter, uint64_t value) {
  Tally& t = tally_of(segment_, counter);
  std::atomic_ref<uint64_t> word(t.word);
  uint64_t old = word.load(std::memory_order_seq_cst);
  uint64_t next = 0;
  do {
    const uint64_t old_value = old >> kTallyCountBits;
    if (old_value > value) return;  // a later round's count: nobody waits on this one there
    next = old_value == value ? old + 1 : (value << kTallyCountBits) | 1;
  } while (!word.compare_exchange_weak(old, next, std::memory_order_seq_cst));
  const bool complete = (next & kCountMask) == static_cast<uint64_t>(segment_.size());
  const bool replaced = (old >> kTallyCountBits) != value &&
                        (old & kCountMask) != static_cast<uint64_t>(segment_.size());
  if ((complete || replaced) &&
      std::atomic_ref<uint32_t>(t.sleepers).load(std::memory_order_seq_cst) != 0) {
    ring_bell(t.bell);
  }
}

common::Status Waiter::await(Counter counter, int peer, uint64_t target) {
  for (int i = 0; i < spins_; ++i) {
    if (load(counter, peer) >= target) return common::Status::ok();
    cpu_relax();
  }
  for (int i = 0; i < yields_; ++i) {
    if (load(counter, peer) >= target) return common::Status::ok();
    if (interrupted()) return common::aborted("aborted");
    sched_yield();
  }
  return sleep_until(counter, peer, target);
}

common::Status Waiter::await_all(Counter counter, uint64_t target) {
  if (tallied_) return await_tally(counter, target);
  for (int k = 1; k <= segment_.size(); ++k) {
    HVD_RETURN_IF_ERROR(await(counter, (rank_ + k) % segment_.size(), target));
  }
  return common::Status::ok();
}

common::Status Waiter::await_tally(Counter counter, uint64_t target) {
  const int n = segment_.size();
  Tally& t = tally_of(segment_, counter);
  std::atomic_ref<uint64_t> word(t.word);
  std::atomic_ref<uint32_t> bell(t.bell);
  std::atomic_ref<uint32_t> sleepers(t.sleepers);
  const auto deadline = Clock::now() + timeout_;
  int k = 1;  // peers rank_ + 1, rank_ + 2, ... before it have reached `target`
  auto first_late = [&] {
    for (; k <= n; ++k) {
      if (load(counter, (rank_ + k) % n) < target) return (rank_ + k) % n;
    }
    return -1;
  };
  for (int i = 0; i < yields_; ++i) {
    if (first_late() < 0) return common::Status::ok();
    if (interrupted()) return common::aborted("aborted");
    sched_yield();
  }
  while (true) {
    const int peer = first_late();
    if (peer < 0) return common::Status::ok();
    if (interrupted()) return common::aborted("aborted");
    if (common::Status gone = peers_.check(peer); !gone.is_ok()) {
      blamed_.store(peers_.culprit(peer));
      return gone;
    }
    // A later value took the tally over: only the peer's own bell tells.
    if ((word.load(std::memory_order_seq_cst) >> kTallyCountBits) > target) {
      HVD_RETURN_IF_ERROR(await(counter, peer, target));
      continue;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      blamed_.store(peer);
      return common::timeout_error("timed out after " + std::to_string(timeout_.count()) +
                                   " ms waiting for " + peers_.describe(peer));
    }
    const uint32_t seen = bell.load(std::memory_order_seq_cst);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint64_t w = word.load(std::memory_order_seq_cst);
    const bool done = (w >> kTallyCountBits) == target && (w & kCountMask) == static_cast<uint64_t>(n);
    if (!done && (w >> kTallyCountBits) <= target && load(counter, peer) < target && !interrupted()) {
      futex_wait(&t.bell, seen, std::min<Clock::duration>(slice_, deadline - now));
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

common::Status Waiter::sleep_until(Counter counter, int peer, uint64_t target) {
  RankSlot& awaited = segment_.slot(peer);
  std::atomic_ref<uint32_t> bell(awaited.bell);
  std::atomic_ref<uint32_t> sleepers(awaited.sleepers);
  auto deadline = Clock::now() + timeout_;
  while (true) {
    if (load(counter, peer) >= target) return common::Status::ok();
    if (interrupted()) return common::aborted("aborted");
    if (common::Status gone = peers_.check(peer); !gone.is_ok()) {
      blamed_.store(peers_.culprit(peer));
      return gone;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      blamed_.store(peer);
      return common::timeout_error("timed out after " + std::to_string(timeout_.count()) +
                                   " ms waiting for " + peers_.describe(peer));
    }
    uint32_t seen = bell.load(std::memory_order_seq_cst);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (load(counter, peer) < target && !interrupted()) {
      futex_wait(&awaited.bell, seen, std::min<Clock::duration>(slice_, deadline - now));
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

common::Status Waiter::peer_failure(int peer, const std::string& what) {
  if (common::Status gone = peers_.check(peer); !gone.is_ok()) {
    blamed_.store(peers_.culprit(peer));
    return gone;
  }
  blamed_.store(peer);
  return common::unavailable(what + " " + peers_.describe(peer));
}

void Waiter::interrupt() {
  interrupted_.store(true, std::memory_order_seq_cst);
  ring();
}

void Waiter::leave(common::StatusCode code) {
  RankSlot& slot = segment_.slot(rank_);
  std::atomic_ref<int32_t>(slot.left_code).store(static_cast<int32_t>(code), std::memory_order_relaxed);
  std::atomic_ref<int32_t>(slot.blamed).store(blamed_.load() + 1, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(segment_.slot(rank_).state).store(kSlotLeft, std::memory_order_seq_cst);
  ring();
}

}  // namespace hvd::transports::shm
