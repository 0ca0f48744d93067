#include "transports/shm/cross_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace hvd::transports::shm {

namespace {

std::atomic<int> refused_rank{-1};

bool turned_off() {
  const char* value = std::getenv("HVD_SHM_CROSS_MEMORY");
  if (value == nullptr) return false;
  for (const char* off : {"0", "off", "false", "no"}) {
    if (strcasecmp(value, off) == 0) return true;
  }
  return false;
}

template <typename T>
void store(T& word, T value) {
  std::atomic_ref<T>(word).store(value, std::memory_order_relaxed);
}

template <typename T>
T load(T& word) {
  return std::atomic_ref<T>(word).load(std::memory_order_relaxed);
}

}  // namespace

void CrossMemory::refuse_probe_for_testing(int rank) { refused_rank.store(rank); }

CrossMemory::CrossMemory(const Segment& segment, int rank)
    : segment_(segment), rank_(rank), pids_(static_cast<size_t>(segment.size()), 0) {
  uint64_t namespace_here = segment.slot(rank).pid_namespace;
  for (int peer = 0; peer < segment.size(); ++peer) {
    const RankSlot& slot = segment.slot(peer);
    if (namespace_here != 0 && slot.pid_namespace == namespace_here) {
      pids_[static_cast<size_t>(peer)] = std::atomic_ref<const int32_t>(slot.pid).load();
    }
  }
}

void CrossMemory::offer_probe() {
  RankSlot& slot = segment_.slot(rank_);
  probe_ = 0x68766463726f7373ULL ^ (static_cast<uint64_t>(getpid()) << 20) ^
           reinterpret_cast<uintptr_t>(&probe_);
  store(slot.cross_probe, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&probe_)));
  store(slot.cross_probe_value, probe_);
}

void CrossMemory::probe_peers() {
  if (turned_off()) {
    why_ = "HVD_SHM_CROSS_MEMORY turns it off";
  } else if (refused_rank.load() == rank_) {
    why_ = "refused for a test";
  }
  for (int peer = 0; peer < segment_.size() && why_.empty(); ++peer) {
    RankSlot& slot = segment_.slot(peer);
    std::string who = "rank " + std::to_string(peer);
    if (pids_[static_cast<size_t>(peer)] <= 0) {
      why_ = who + " is in another pid namespace";
      continue;
    }
    uint64_t seen = 0;
    int error = read(peer, load(slot.cross_probe), reinterpret_cast<std::byte*>(&seen), sizeof seen);
    if (error != 0) {
      why_ = "process_vm_readv of " + who + " failed: " + std::strerror(error) +
             (error == EPERM ? " (Yama ptrace_scope, or a seccomp filter?)" : "");
    } else if (seen != load(slot.cross_probe_value)) {
      why_ = "process_vm_readv of " + who + " read the wrong value";
    }
  }
  bytes_read_ = 0;
  store(segment_.slot(rank_).cross_verdict,
        static_cast<uint32_t>(why_.empty() ? kCrossReadable : kCrossRefused));
}

void CrossMemory::agree() {
  for (int peer = 0; peer < segment_.size() && why_.empty(); ++peer) {
    if (load(segment_.slot(peer).cross_verdict) != kCrossReadable) {
      why_ = "rank " + std::to_string(peer) + " cannot read all its peers' memory";
    }
  }
  enabled_ = why_.empty();
}

int CrossMemory::read(int peer, uint64_t address, std::byte* dst, size_t bytes) {
  pid_t pid = pids_[static_cast<size_t>(peer)];
  while (bytes > 0) {
    iovec local{dst, bytes};
    iovec remote{reinterpret_cast<void*>(address), bytes};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return EFAULT;
    auto n = static_cast<size_t>(got);
    dst += n;
    address += n;
    bytes -= n;
    bytes_read_ += n;
  }
  return 0;
}

}  // namespace hvd::transports::shm
