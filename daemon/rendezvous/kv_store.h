// The rendezvous key-value store: a thread-safe map whose gets wait, with a
// deadline, for keys to appear. A waiting get waits for one key, the first
// of its keys still missing, and only a set of that key (or close(), an
// abort) wakes it: N ranks each waiting for N keys cost O(N) wakeups per
// rank, not one wakeup of every waiter per set (issue 31). Served over gRPC by RendezvousService and
// usable in-process (tests run transports over it with ranks as threads).
// The service's gets wait with no thread (get_async): the set, abort or
// close that ends the wait completes them; the blocking get() is one of
// those with the caller's thread waiting for it.
//
// Every key has an owner: the slot whose worker wrote it first (set_by,
// add_by), or the job (kJob: the common::Store calls, hvdrun, the service, a
// caller with the job's token). A slot may change or delete only the keys it
// owns (or create new ones); the job any key. Quotas (set_quotas) bound what
// the store holds, in all and per owning slot: a key costs its own bytes,
// its value's and kEntryBytes, and counts as one key.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "daemon/rendezvous/blocking_wait.h"
#include "common/store.h"

namespace hvd::daemon {

using common::Result;
using common::Status;

class KvStore final : public common::Store {
 public:
  static constexpr int kJob = -1;
  // What one key costs besides its own and its value's bytes (the map's
  // node and the strings' headers, about).
  static constexpr size_t kEntryBytes = 128;
  // 0: no limit.
  struct Quota {
    size_t bytes = 0;
    size_t keys = 0;
  };
  struct Usage {
    size_t bytes = 0;
    size_t keys = 0;
  };

  // `job`: what the store may hold in all; `per_slot`: what the keys of one
  // slot may. A write that would go over one is refused (kFailedPrecondition,
  // naming the quota); a write that does not grow the store never is. Keys
  // already there stay.
  void set_quotas(Quota job, Quota per_slot);
  // What the store holds now: in all, or the keys `owner` owns.
  Usage usage() const;
  Usage usage_of(int owner) const;

  // The writes of `writer` (a slot, or kJob). A key another owner holds is
  // refused to a slot with kUnauthenticated naming its owner; over a quota
  // with kFailedPrecondition naming it; kCancelled once closed.
  Status set_by(int writer, const std::string& key, std::string value);
  Result<int64_t> add_by(int writer, const std::string& key, int64_t delta);
  Result<bool> remove_by(int writer, const std::string& key);

  // The job's writes (kJob).
  Status set(const std::string& key, const std::string& value) override;
  // kTimeout "timed out after N ms waiting for keys: a, b" naming the missing
  // keys; kCancelled once close() was called.
  Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                       std::chrono::milliseconds timeout) override;
  // Like get(); also gives up with kCancelled once `cancelled` returns true
  // (polled every 100 ms), e.g. when the gRPC client went away.
  Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                       std::chrono::milliseconds timeout,
                                       const std::function<bool()>& cancelled);
  // A get that holds no thread while it waits: `done` is called once, with
  // what get() would return, on this thread when it can answer at once (0
  // is returned then), else on the thread of the set(), abort_prefix(),
  // close() or give_up() that ends the wait (with no lock of the store
  // held); a ticket for give_up() otherwise.
  using GetDone = std::function<void(Result<std::vector<std::string>>)>;
  uint64_t get_async(const std::vector<std::string>& keys, GetDone done);
  // Ends the waiting get `ticket` (nothing when it ended already): kTimeout
  // "timed out after `waited` ms waiting for keys: ..." or kCancelled "gave
  // up waiting for keys: ..." naming the keys still missing.
  using GiveUp = daemon::GiveUp;
  void give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited);
  // Gets waiting now (tests).
  size_t waiting_gets() const;
  // kInvalidArgument when the stored value is not a decimal integer.
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Result<bool> check(const std::vector<std::string>& keys) override;
  Result<bool> remove(const std::string& key) override;
  // Deletes every key that starts with `prefix` (and forgets an abort of
  // it); how many were deleted.
  size_t remove_prefix(const std::string& prefix);
  // The keys under `prefix` that are missing now will never come (their
  // writer is gone): every get waiting for one of them, now or later, fails
  // with kAborted naming `reason`, instead of waiting for its deadline.
  // Keys already there are still served; set() still works.
  void abort_prefix(const std::string& prefix, const std::string& reason);

  // Wakes every waiting get with kCancelled; later gets fail at once.
  void close();

 private:
  struct Entry {
    std::string value;
    int owner = kJob;
  };

  // The aborted prefix `key` falls under, or null.
  const std::string* abort_reason_locked(const std::string& key) const;
  // Why `writer` may not change `key` (held as `entry`, null when absent)
  // to a value of `value_bytes`: OK when it may.
  Status admit_locked(int writer, const std::string& key, const Entry* entry,
                      size_t value_bytes) const;
  // Stores `value` under `key` for `writer` when admit_locked() lets it.
  Status put_locked(int writer, const std::string& key, std::string value);
  void account_locked(int owner, const std::string& key, size_t old_value_bytes, bool existed,
                      size_t new_value_bytes, bool exists);

  // A get waiting for one key, the first of its keys still missing (keys
  // before `next` were there when last looked at).
  struct Waiting {
    std::vector<std::string> keys;
    size_t next = 0;
    GetDone done;
  };
  using Answer = Result<std::vector<std::string>>;
  using Ready = std::vector<std::pair<GetDone, Answer>>;
  static void answer(Ready& ready);
  // The answer of `get` now, or nullopt when it waits (then it waits for
  // its key `next` in waiters_, as `ticket`).
  std::optional<Answer> evaluate_locked(uint64_t ticket, Waiting& get);
  std::vector<std::string> missing_locked(const std::vector<std::string>& keys) const;
  // Looks again at the gets waiting for `key`; at every waiting get.
  void wake_locked(const std::string& key, Ready& ready);
  void wake_all_locked(Ready& ready);
  void recheck_locked(uint64_t ticket, Ready& ready);

  mutable std::mutex mu_;
  std::multimap<std::string, uint64_t> waiters_;  // key -> the gets waiting for it
  std::map<uint64_t, Waiting> gets_;              // ticket -> a waiting get
  uint64_t next_ticket_ = 1;
  std::map<std::string, Entry> values_;
  Quota job_quota_;
  Quota slot_quota_;
  Usage total_;
  std::map<int, Usage> owned_;  // by owner (kJob too); owners with no key are dropped
  std::map<std::string, std::string> aborted_;  // prefix -> reason
  bool closed_ = false;
};

}  // namespace hvd::daemon
