// Whether the peers of a segment are still there: a peer whose transport
// closed, failed or was aborted marks its slot left; a peer process that
// died is seen through a pidfd (pidfd_open, readable once the process has
// exited, zombie or reaped; kill(pid, 0) where pidfds are missing). A peer
// in another pid namespace, or in this very process (ranks as threads), is
// watched through its slot only.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {

class PeerWatch {
 public:
  // Reads the peers' pids from `segment` (every rank attached).
  PeerWatch(const Segment& segment, int rank);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // OK while every peer is there; otherwise kUnavailable naming a peer that
  // is gone (`first` is looked at first), e.g. "rank 2 (pid 4242) died",
  // or, for a peer that left because of another, that peer's own failure:
  // "rank 1 left: it timed out waiting for rank 0" (kTimeout).
  common::Status check(int first) const;
  // Whom to blame for what check() reports: the peer that is gone or, when
  // it left because of another peer, that one (-1 when none is gone).
  int culprit(int first) const;
  // "rank 2 (pid 4242, stopped)": the peer and what /proc says of it, for
  // timeout messages.
  std::string describe(int peer) const;

 private:
  common::Status check_one(int peer) const;
  bool has_died(int peer) const;

  const Segment& segment_;
  int rank_;
  std::vector<int> pids_;     // 0: not watched by pid
  std::vector<int> pidfds_;   // -1: none (kill(pid, 0) instead)
};

}  // namespace hvd::transports::shm
