// One Rendezvous.Set in flight per caller (issue 29). gRPC 1.51 reads a
// call's whole body before its handler runs, so a caller's concurrent Set
// calls would all be received (about twice their size each) before the first
// could be refused at the store's quota. The service's call gate takes a
// caller's lane on the call's headers, before its body is read, and the Set
// handler gives it back: a caller's next Set waits for it, so at most one body
// per caller is in memory, and the calls that waited are refused on their
// headers once the first one got the caller barred (WorkerRights::barred).
//
// Bounds: a Set waits at most `wait` for its lane; at most `max_waiting`
// wait per lane (more are refused at once); a lane whose Set never reached
// its handler (the body never arrived, the client gave up) is taken over
// after `lease`. Thread-safe; enter() blocks (the gate runs it on a thread of
// its own: proto/gated_credentials.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include "common/status.h"

namespace hvd::daemon {

class SetLanes {
 public:
  struct Limits {
    std::chrono::milliseconds wait{20'000};
    std::chrono::milliseconds lease{15'000};
    int max_waiting = 16;
  };

  SetLanes() : SetLanes(Limits{}) {}
  explicit SetLanes(Limits limits) : limits_(limits) {}
  // close(), then waits until no enter() is inside.
  ~SetLanes();
  SetLanes(const SetLanes&) = delete;
  SetLanes& operator=(const SetLanes&) = delete;

  // Takes `lane` (a slot, or KvStore::kJob) once it is free: OK.
  // kFailedPrecondition, naming the lane and the bound, when max_waiting
  // already wait or after `wait`; kUnavailable once closed.
  common::Status enter(int lane);
  // Gives `lane` back; a lane that is not held stays as it is.
  void leave(int lane);
  // Wakes every waiter and refuses every enter() from now on.
  void close();

 private:
  struct Lane {
    bool held = false;
    std::chrono::steady_clock::time_point since;
    int waiting = 0;
  };
  const Limits limits_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Lane> lanes_;  // the lanes held or waited for
  int inside_ = 0;             // enter() calls not returned yet
  bool closed_ = false;
};

}  // namespace hvd::daemon
