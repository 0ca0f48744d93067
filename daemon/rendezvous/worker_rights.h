// What each caller of the Rendezvous service may do (docs/security.md,
// "Rendezvous calls"). The job's token (hvdrun itself; every rank of a job a
// foreign launcher started) may do anything. A worker's credential
// (worker_credentials.h) stands for the worker hvdrun launched as its id,
// and through it for one slot: the id itself, or, for a hot spare, the slot
// it was promoted into (none before). With it a worker may
//  - join only as its slot, and heartbeat only for its slot (so that it can
//    neither keep a hung worker alive nor say that another one left);
//  - wait for promotion only as itself;
//  - write (Set, Add, Delete) only keys of the round its slot last joined
//    (under round_key_prefix(round)), never the round's `lost` mark (the
//    service's); which of those keys are its own is the store's part
//    (KvStore::set_by: the slot that wrote a key first owns it);
//  - read (Get, Check, Watch) anything of the job.
// A slot whose Set of more than kLargeWriteBytes was refused (whatever the
// reason: an honest worker is never refused) has its later Set calls
// refused on their headers, before their bodies are read, until it joins
// another round: a flood of big requests costs one request's memory, not
// one per call.
// Slots are stable for a worker's life; ranks change with elastic rounds,
// which is why rights are by slot. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "daemon/rendezvous/hot_spares.h"
#include "daemon/rendezvous/worker_credentials.h"

namespace hvd::daemon {

class WorkerRights {
 public:
  // Ids below `slots` are slots; at or above, hot spares (whose promotions
  // `spares` knows; it must outlive this).
  WorkerRights(int slots, const HotSpares& spares) : slots_(slots), spares_(spares) {}
  void set_slots(int slots);

  static constexpr size_t kLargeWriteBytes = 64 << 10;

  // The slot's Join returned a place in `round`: it writes that round's keys
  // (and its Set calls are no longer barred).
  void joined(int slot, int64_t round);
  // A Set of `bytes` of the worker was refused because of `why`: when it was
  // large, bars the Set calls of its slot.
  void refused(const Caller& caller, size_t bytes, const std::string& why);
  // Why the caller's Set calls are refused on their headers; nullopt when
  // they are not.
  std::optional<std::string> barred(const Caller& caller) const;

  // The slot a worker caller acts for; nullopt for the job and for a spare
  // not promoted (yet).
  std::optional<int> slot_of(const Caller& caller) const;

  // nullopt when the caller may; otherwise why not, one line (the service
  // refuses the call with PERMISSION_DENIED and it).
  std::optional<std::string> may_join(const Caller& caller, int rank) const;
  std::optional<std::string> may_heartbeat(const Caller& caller, int rank) const;
  std::optional<std::string> may_await_promotion(const Caller& caller, int spare) const;
  // Set, Add and Delete of `key`.
  std::optional<std::string> may_write(const Caller& caller, std::string_view key) const;

 private:
  // "slot 3" or "spare 9 (not promoted)": who a worker caller is, for messages.
  std::string who(const Caller& caller) const;
  // nullopt when the caller acts for `slot`.
  std::optional<std::string> acts_for(const Caller& caller, int slot, const char* what) const;

  mutable std::mutex mu_;
  int slots_;
  const HotSpares& spares_;
  std::unordered_map<int, int64_t> rounds_;  // slot -> the round it joined last
  std::unordered_map<int, std::string> barred_;  // slot -> why its Set calls are refused
};

}  // namespace hvd::daemon
