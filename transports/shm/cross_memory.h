// Cross-memory attach (CMA) for the shm transport: a rank reads its peers'
// bytes straight out of their buffers with process_vm_readv(2) into its
// own, instead of each sender copying into its staging area and each
// receiver copying out of it (two copies fewer per byte that crosses).
//
// Whether it works is decided once per segment, when the transport is
// created (Collectives::agree_on_cross_memory runs the rounds): every rank
// publishes in its slot the address of a probe word and the value in it,
// reads every peer's probe word with process_vm_readv and publishes its
// verdict; CMA is used only when every rank read every peer. It fails under
// Yama's ptrace_scope, seccomp filters, or peers in another pid namespace;
// then every rank stays on the staging path and says why at debug level.
// HVD_SHM_CROSS_MEMORY=0 (or off/false/no) turns it off. Ranks as threads
// of one process read through their own pid: the same path.
//
// Only alltoallv uses it (collectives.cc); which bytes take it is
// decided per direction from counts both ends know (kCrossMemoryMinBytes).
// allgatherv stays on staging: its staging copies stay in cache (chunks of
// 1 MiB) and the kernel's page-by-page copy measured slower there (2 and 4
// ranks, 1-64 MiB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {

// The bytes from one rank to another from which they cross by CMA.
inline constexpr size_t kCrossMemoryMinBytes = 256 << 10;

enum CrossVerdict : uint32_t { kCrossUnknown = 0, kCrossReadable = 1, kCrossRefused = 2 };

class CrossMemory {
 public:
  CrossMemory(const Segment& segment, int rank);

  // Step 1 (before a round every rank posts): offer this rank's probe word.
  void offer_probe();
  // Step 2 (after every rank posted step 1): read every peer's probe word
  // and publish the verdict in this rank's slot.
  void probe_peers();
  // Step 3 (after every rank posted step 2): enabled() becomes true when
  // every verdict is kCrossReadable; why() says why not.
  void agree();

  bool enabled() const { return enabled_; }
  const std::string& why() const { return why_; }
  // Bytes this rank read from its peers by CMA so far (tests).
  uint64_t bytes_read() const { return bytes_read_; }

  // Copies `bytes` at `address` in `peer`'s memory to `dst`: 0 or errno.
  int read(int peer, uint64_t address, std::byte* dst, size_t bytes);

  // Tests: makes the probe of `rank` fail (-1: none) in every later
  // transport of this process (and of processes forked after the call).
  static void refuse_probe_for_testing(int rank);

 private:
  const Segment& segment_;
  int rank_;
  std::vector<int> pids_;  // per rank; 0: not readable (another pid namespace)
  uint64_t probe_ = 0;     // the word peers read in step 2
  bool enabled_ = false;
  std::string why_;
  uint64_t bytes_read_ = 0;
};

}  // namespace hvd::transports::shm
