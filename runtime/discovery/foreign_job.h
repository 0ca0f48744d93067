// What a worker started by a foreign launcher (torchrun, mpirun, srun) does
// around the rendezvous that hvdrun would otherwise provide:
//   init:     rank 0 starts the job's Rendezvous service in-process
//             (RendezvousHost); the other ranks wait, up to the start
//             timeout, until it answers.
//   shutdown: every rank adds 1 under kFinishedKey; rank 0 keeps serving
//             until all ranks have (or 30 s pass), then closes; the others
//             return once rank 0's service is gone, so that a following
//             init() meets rank 0's next service, not the closing one.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/rendezvous/rendezvous_client.h"
#include "runtime/discovery/rendezvous_host.h"
#include "runtime/discovery/world.h"

namespace hvd::runtime {

class ForeignJob {
 public:
  // How long shutdown waits for the other ranks (rank 0) or for rank 0's
  // service to close (the others).
  static constexpr std::chrono::milliseconds kFinishWait{30'000};
  // The longest pause between two attempts to reach rank 0's service.
  static constexpr std::chrono::milliseconds kReconnectBackoff{500};

  // Rank 0: starts the service (bound to 127.0.0.1 when every rank is on
  // this host and the rendezvous host is a loopback name, else 0.0.0.0;
  // ::1 and :: for an IPv6 literal). Every rank first checks that the
  // rendezvous host resolves: kUnavailable at once, worded for rank 0 or for
  // the others, when it does not.
  static common::Result<std::unique_ptr<ForeignJob>> start(const WorldInfo& world);
  ~ForeignJob();  // closes rank 0's service at once

  // Waits until the service answers; returns what is left of `timeout`.
  // kTimeout naming the address when it does not: rank 0 is asked whether
  // the address is its own, the others whether rank 0 started.
  common::Result<std::chrono::milliseconds> reach(RendezvousClient& client,
                                                  std::chrono::milliseconds timeout) const;

  // The shutdown protocol above. `joined`: this rank's init got through the
  // join (when it did not, rank 0 closes at once and the others do nothing).
  // `started`: init completed; a rank whose init failed after the join says
  // it is finished but does not wait for rank 0's service to close.
  void finish(bool joined, bool started);

 private:
  ForeignJob(const WorldInfo& world, std::unique_ptr<RendezvousHost> host);

  std::string launcher_;
  std::string address_;
  std::string host_origin_;  // "'host' (where it came from)"
  std::string token_;  // secret: never logged
  std::unique_ptr<RendezvousHost> host_;  // rank 0 only
};

}  // namespace hvd::runtime
