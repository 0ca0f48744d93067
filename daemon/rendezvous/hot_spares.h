// The hot spares of an elastic job (hvdrun --spares; docs/elastic.md):
// worker processes that ran the user's script up to hvd.init() and wait
// there (Rendezvous.AwaitPromotion), holding no slot, until hvdrun promotes
// one into the slot of a worker that failed. A spare is known by its id
// (its HVD_RANK, at least --max-np). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "common/status.h"

namespace hvd::daemon {

class HotSpares {
 public:
  // The spare waits up to `timeout` (or until `cancelled`) to be promoted:
  // its slot, or nullopt when the time passed first (it asks again);
  // kCancelled after close().
  common::Result<std::optional<int>> await(int spare, std::chrono::milliseconds timeout,
                                           const std::function<bool()>& cancelled);
  // An await that holds no thread while it waits (the service's): `done` is
  // called once with what await() would return, on this thread when the
  // spare is promoted already or the job ended (0 is returned then), else
  // on the thread of promote(), close() or give_up() (with no lock held); a
  // ticket otherwise.
  using AwaitDone = std::function<void(common::Result<std::optional<int>>)>;
  uint64_t await_async(int spare, AwaitDone done);
  // Ends the waiting await `ticket` with no slot (the time passed, or its
  // caller went away); nothing when it ended already.
  void give_up(uint64_t ticket);
  // hvdrun promotes `spare` into `slot`; true when the spare waits now (it
  // joins the next round at once), false when it is still on its way to
  // hvd.init() (it gets the slot when it arrives).
  bool promote(int spare, int slot);
  // The slot `spare` was promoted into; nullopt while it is not.
  std::optional<int> promoted_slot(int spare) const;
  // The spares waiting now, ascending.
  std::vector<int> waiting() const;
  void close();

 private:
  struct Waiting {
    int spare = 0;
    AwaitDone done;
  };
  mutable std::mutex mu_;
  std::map<uint64_t, Waiting> awaiting_;  // ticket -> a call waiting now
  uint64_t next_ticket_ = 1;
  std::map<int, int> waiters_;   // spare -> calls waiting now
  std::map<int, int> promoted_;  // spare -> its slot
  bool closed_ = false;
};

}  // namespace hvd::daemon
