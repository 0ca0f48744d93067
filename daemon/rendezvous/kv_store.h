// The rendezvous key-value store: a thread-safe map whose gets wait, with a
// deadline, for keys to appear. Served over gRPC by RendezvousService and
// usable in-process (tests run transports over it with ranks as threads).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/store.h"

namespace hvd::daemon {

using common::Result;
using common::Status;

class KvStore final : public common::Store {
 public:
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
  std::mutex mu_;
  std::condition_variable changed_;
  // The aborted prefix `key` falls under, or null.
  const std::string* abort_reason_locked(const std::string& key) const;

  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> aborted_;  // prefix -> reason
  bool closed_ = false;
};

}  // namespace hvd::daemon
