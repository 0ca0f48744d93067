// A Store that follows the job's rounds: it forwards every call to the store
// of the current round under a prefix of that round, and fails while no
// round is bound (between hvd.shutdown() and the next hvd.init(), when
// elastic recovery rejoins in place). What a GPU transport made by shrink
// (runtime/device_shrink.h) keeps as its store: it outlives the Runtime
// of the round it was made in, and the store it was given then would not.
// A worker may write only keys of the round it last joined, which is why
// the prefix follows the round too. Thread-safe; unbind() waits for the
// calls in progress (every one of them has a deadline).
#pragma once

#include <chrono>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/store.h"

namespace hvd::runtime {

class ReboundStore final : public common::Store {
 public:
  // From now on calls go to `store` (it must outlive the binding) with
  // keys under `prefix`.
  void bind(common::Store* store, std::string prefix);
  void unbind();

  common::Status set(const std::string& key, const std::string& value) override;
  common::Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                               std::chrono::milliseconds timeout) override;
  common::Result<int64_t> add(const std::string& key, int64_t delta) override;
  common::Result<bool> check(const std::vector<std::string>& keys) override;
  common::Result<bool> remove(const std::string& key) override;

 private:
  common::Status unbound() const;
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;

  mutable std::shared_mutex mu_;
  common::Store* store_ = nullptr;  // null: between rounds
  std::string prefix_;
};

}  // namespace hvd::runtime
