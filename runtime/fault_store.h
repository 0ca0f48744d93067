// The store a worker's transports see when HVD_TEST_FAULT is set: the
// rendezvous client, reaching the fault point "keys" after each key this
// worker writes (the transport published its address; its peers may
// connect to it, it has connected to nobody yet). Tests only: without
// faults the transports get the client itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/store.h"
#include "runtime/fault_point.h"

namespace hvd::runtime {

class FaultStore final : public common::Store {
 public:
  // `round` and `slot` are read at each write (the worker's current ones).
  FaultStore(common::Store& store, const FaultPoints& faults, const int64_t& round,
             const int& slot)
      : store_(store), faults_(faults), round_(round), slot_(slot) {}

  common::Status set(const std::string& key, const std::string& value) override;
  common::Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                               std::chrono::milliseconds timeout) override {
    return store_.get(keys, timeout);
  }
  common::Result<int64_t> add(const std::string& key, int64_t delta) override {
    return store_.add(key, delta);
  }
  common::Result<bool> check(const std::vector<std::string>& keys) override {
    return store_.check(keys);
  }
  common::Result<bool> remove(const std::string& key) override { return store_.remove(key); }

 private:
  common::Store& store_;
  const FaultPoints& faults_;
  const int64_t& round_;
  const int& slot_;
};

}  // namespace hvd::runtime
