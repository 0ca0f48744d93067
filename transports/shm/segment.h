// The shared-memory segment of one shm transport world (one job round,
// process set and host): its layout and its mapping.
//
// Layout (every part aligned to a page):
//   SegmentHeader                 sizes, the attach count, the wake-up bell,
//                                 whether ranks outnumber cores, the tallies
//   RankSlot[size]                per rank: pid, state, progress counters
//   data[size][2]                 per rank, two halves (rounds alternate
//                                 between them): staging (what this rank
//                                 offers its peers) then result (the slice
//                                 it reduced, in an allreduce)
// A layout change bumps kSegmentVersion (attach refuses another version).
// Every shared word is read and written through std::atomic_ref. The
// creator zero-fills the segment (ftruncate) and writes the header; `magic`
// last, so an attacher that sees it sees the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace hvd::transports::shm {

inline constexpr uint64_t kSegmentMagic = 0x316d68732d647668;  // "hvd-shm1", little-endian
inline constexpr uint32_t kSegmentVersion = 5;

// How many ranks have published a progress counter at its latest value
// (waiter.h): `word` holds the value (high 40 bits) and the count (low 24);
// the waiters of a whole round sleep on `bell`, which the rank that
// completes the count rings once. Used only in crowded segments.
struct alignas(64) Tally {
  uint64_t word;
  uint32_t bell;
  uint32_t sleepers;
};
inline constexpr int kTallyCountBits = 24;
inline constexpr int kTallies = 3;  // one per waiter.h Counter

struct alignas(64) SegmentHeader {
  uint64_t magic;
  uint32_t version;
  int32_t size;            // ranks
  uint64_t staging_bytes;  // per rank and half
  uint64_t result_bytes;   // per rank and half
  uint64_t total_bytes;
  uint64_t nonce;  // random, published with the location: an attacher checks it found this one
  alignas(64) uint32_t attached;  // ranks attached so far; size + 1 once the name is removed
  alignas(64) uint32_t bell;      // the attach's: bumped and futex-woken as ranks attach
  uint32_t sleepers;              // waiters asleep (or about to be) on `bell`
  // Ranks outnumber the creator's usable cores: a rank waits for a whole
  // round at a tally, not for each peer in turn (waiter.h). The creator's
  // verdict, so that every rank of the segment waits the same way.
  uint32_t crowded;
  Tally tallies[kTallies];
};

enum SlotState : uint32_t { kSlotEmpty = 0, kSlotAttached = 1, kSlotLeft = 2 };

// One rank's words. Counters hold "rounds done + 1" and only grow; each on
// its own cache line (one writer, many readers).
struct alignas(64) RankSlot {
  int32_t pid;
  uint32_t state;          // SlotState
  uint64_t pid_namespace;  // inode of /proc/self/ns/pid: pids mean something only within one
  int32_t blamed;          // when it left on a peer's account: that peer + 1 (0: none)
  int32_t left_code;       // and the common::StatusCode it failed with
  alignas(64) uint64_t posted;    // this rank staged its data for the round
  alignas(64) uint64_t reduced;   // this rank's reduced slice of the round is in its result area
  alignas(64) uint64_t consumed;  // this rank read everything it needed from the round
  alignas(64) uint64_t meta[2];   // per half: a small value offered with the data (alltoallv rounds)
  // Cross-memory attach (cross_memory.h): the address of this rank's probe
  // word and the value in it, this rank's verdict on reading its peers
  // (CrossVerdict), and per half the address of the buffer peers read
  // straight from this rank's memory.
  alignas(64) uint64_t cross_probe;
  uint64_t cross_probe_value;
  uint32_t cross_verdict;
  uint64_t cross_source[2];
  // This rank's bell (waiter.h): bumped and futex-woken when its counters
  // move and someone sleeps on it; only the ranks waiting for this one do.
  alignas(64) uint32_t bell;
  uint32_t sleepers;
};
static_assert(sizeof(RankSlot) == 7 * 64, "RankSlot: a layout change needs a kSegmentVersion bump");

class Segment {
 public:
  // Creates, sizes, maps and initialises a new segment with no name at all
  // (memfd_create): it lives exactly as long as a process maps it or holds
  // its descriptor, so no file can outlive the job whatever happens to the
  // processes. Peers in the same pid namespace open it through locator()
  // ("/proc/<creator pid>/fd/<n>") while the creator holds the descriptor
  // (until close_locator() or destruction). kUnavailable naming the size
  // when the memory cannot be reserved.
  static common::Result<Segment> create_anonymous(int size, size_t staging_bytes);
  // The same under a POSIX shared-memory name (never an existing one:
  // O_EXCL), for peers that share /dev/shm but not a pid namespace; the name
  // stays until unlink(). kUnavailable naming the size when /dev/shm has no
  // room.
  static common::Result<Segment> create(const std::string& name, int size, size_t staging_bytes);
  // Maps the segment that create() or create_anonymous() made for a world of
  // `size`: `where` is the POSIX name or the anonymous segment's locator,
  // `nonce` its header's (a descriptor number or name reused for another
  // segment is refused).
  static common::Result<Segment> attach(const std::string& where, int size, uint64_t nonce);
  // Removes a POSIX name (mappings stay valid); a missing name is fine.
  static void unlink(const std::string& name);
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) = delete;
  Segment(const Segment&) = delete;
  ~Segment();
  // Where peers attach to an anonymous segment while its creator holds the
  // descriptor; empty otherwise.
  const std::string& locator() const { return locator_; }
  // Lets the descriptor go (every peer has the segment mapped, or none will
  // come): the locator stops working.
  void close_locator();
  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  RankSlot& slot(int rank) const;
  std::byte* staging(int rank, int half) const;
  std::byte* result(int rank, int half) const;
  int size() const { return size_; }
  size_t staging_bytes() const { return staging_bytes_; }
  size_t result_bytes() const { return result_bytes_; }
 private:
  Segment(void* base, size_t bytes, int size, size_t data_offset, size_t staging_bytes,
          size_t result_bytes);

  void* base_;
  size_t bytes_;
  int size_;
  size_t data_offset_;
  size_t staging_bytes_;
  size_t result_bytes_;
  int fd_ = -1;          // an anonymous segment's descriptor, held for the locator
  std::string locator_;  // "/proc/<pid>/fd/<fd_>" while fd_ is held
};

}  // namespace hvd::transports::shm
