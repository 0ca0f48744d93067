// Fault injection for the elastic tests (tests/multihost/chaos*.py,
// tests/integration/test_elastic*.py; docs/testing.md): a worker fails at a
// named point of its life, so that a test can put a fault exactly into a
// phase that timing alone hits only by chance (between its Join and its
// transports' key exchange, say). Inert unless the environment sets
//
//   HVD_TEST_FAULT=<point>:<action>[:round=N][:slot=S][:key=K][,<point>:...]
//
// <action>: kill (SIGKILL itself), stop (SIGSTOP itself: a hung process),
// exit (_exit(3)). round/slot restrict it to that rendezvous round and that
// slot (HVD_RANK), key (point "keys" only) to a key whose name ends with
// "/K" ("cpu/3": gloo's address key of rank 3 in the round's CPU world);
// without them it fires wherever the point is reached. A
// malformed value is an error of hvd_init naming it (never ignored).
//
// Points: "joined" (the round's Join returned; no key of this worker's is
// written yet), "keys" (a transport of this worker wrote a key, its address
// say, and has not connected yet: runtime/fault_store.h), "connected" (the
// round's CPU transport is up; the engine is not started), "heartbeat"
// (the heartbeat thread started; action pause=S only: that thread alone
// sleeps S seconds after its first beat while the process runs on, a
// CPU-starved worker as hvdrun sees it: tests/integration/test_liveness.py).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

class FaultPoints {
 public:
  // Parses HVD_TEST_FAULT's value (empty: no faults).
  static common::Result<FaultPoints> parse(std::string_view spec);

  // Fires the fault set for `point` in `round` on `slot` (at `key`, for
  // the point "keys"), if any.
  void reach(std::string_view point, int64_t round, int slot, std::string_view key = {}) const;

  // Seconds the heartbeat thread pauses after its first beat in `round` on
  // `slot` ("heartbeat:pause=S"); 0 when none.
  int heartbeat_pause(int64_t round, int slot) const;

  bool empty() const { return faults_.empty(); }

 private:
  struct Fault {
    std::string point;
    std::string action;
    int64_t round = -1;  // -1: any
    int slot = -1;       // -1: any
    std::string key;     // empty: any
    int pause = 0;       // point "heartbeat": seconds
  };
  std::vector<Fault> faults_;
};

}  // namespace hvd::runtime
