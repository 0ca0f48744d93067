// An elastic worker's view of its job's membership changes (docs/elastic.md):
// from the moment init's Join returns until shutdown, a thread
// (`hvd-watch`) holds the Rendezvous.Watch stream for the worker's round
// and records which kinds of change arrived (hosts added: a worker waits to
// join; hosts removed) until take_updates() reads them. When a change
// removes slots that are members of this round, its collectives can no
// longer complete: `on_members_removed` is called (once, on the watch
// thread) with the reason and their ranks in the round (ascending; empty
// from a service that does not say), so that the runtime fails them at once
// instead of waiting for a transport timeout.
//
// A stream that fails (the service restarts, the network blips) is opened
// again after a short, growing pause; the service then tells again of a
// worker still waiting to join. stop() cancels the call and joins the
// thread: every wait is bounded by it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/rendezvous/rendezvous_client.h"

namespace hvd::runtime {

class MembershipWatch {
 public:
  // take_updates() bits (hvd_elastic_host_updates).
  static constexpr int kAdded = 1;
  static constexpr int kRemoved = 2;

  using OnMembersRemoved =
      std::function<void(const common::Status& why, const std::vector<int>& ranks)>;

  // Starts watching for `slot`, a member of `round`.
  MembershipWatch(RendezvousClient& client, int slot, int64_t round,
                  OnMembersRemoved on_members_removed);
  ~MembershipWatch();  // stop()s
  MembershipWatch(const MembershipWatch&) = delete;
  MembershipWatch& operator=(const MembershipWatch&) = delete;

  // The kinds of change (kAdded | kRemoved) that arrived since the last call.
  int take_updates() { return updates_.exchange(0); }

  // Ends the stream and the thread. Idempotent; after it returns,
  // on_members_removed is never called.
  void stop();

 private:
  void run();
  // One stream, until it ends; false when watching should stop for good.
  bool watch_once();
  void handle(const hvd::v1::MembershipEvent& event);

  RendezvousClient& client_;
  const int slot_;
  const int64_t round_;
  const OnMembersRemoved on_members_removed_;
  std::atomic<int> updates_{0};
  bool members_removed_ = false;  // watch thread only
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  grpc::ClientContext* call_ = nullptr;  // the open stream's, under mu_
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace hvd::runtime
