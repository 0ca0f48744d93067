#include "transports/shm/waiter.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "transports/shm/futex.h"

namespace hvd::transports::shm {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(10);  // between looks at the peers

uint64_t RankSlot::*member(Counter counter) {
  switch (counter) {
    case Counter::kPosted: return &RankSlot::posted;
    case Counter::kReduced: return &RankSlot::reduced;
    case Counter::kConsumed: return &RankSlot::consumed;
  }
  return &RankSlot::posted;
}

void cpu_relax() { __builtin_ia32_pause(); }

int cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

Waiter::Waiter(Segment& segment, int rank, std::chrono::milliseconds timeout)
    : segment_(segment), rank_(rank), timeout_(timeout), peers_(segment, rank) {
  bool crowded = segment.size() > cpus();
  spins_ = crowded ? 0 : 4000;
  yields_ = crowded ? 32 : 16;
}

uint64_t Waiter::load(Counter counter, int peer) const {
  return std::atomic_ref<uint64_t>(segment_.slot(peer).*member(counter)).load(std::memory_order_seq_cst);
}

void Waiter::ring() {
  SegmentHeader& h = segment_.header();
  std::atomic_ref<uint32_t>(h.bell).fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&h.bell);
}

void Waiter::publish(Counter counter, uint64_t value) {
  std::atomic_ref<uint64_t>(segment_.slot(rank_).*member(counter)).store(value, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(segment_.header().sleepers).load(std::memory_order_seq_cst) != 0) ring();
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
  for (int k = 1; k <= segment_.size(); ++k) {
    HVD_RETURN_IF_ERROR(await(counter, (rank_ + k) % segment_.size(), target));
  }
  return common::Status::ok();
}

common::Status Waiter::sleep_until(Counter counter, int peer, uint64_t target) {
  SegmentHeader& h = segment_.header();
  std::atomic_ref<uint32_t> bell(h.bell);
  std::atomic_ref<uint32_t> sleepers(h.sleepers);
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
      futex_wait(&h.bell, seen, std::min<Clock::duration>(kSlice, deadline - now));
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
