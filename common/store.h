// The key-value contract between transports and whatever holds the keys: the
// rendezvous service over gRPC in a worker, an in-memory map in tests. Modelled
// on c10d's Store: set / get-with-deadline / add / check / delete.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::common {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Waits until every key exists; kTimeout naming the missing keys when the
  // timeout passes first. Values come back in the order of `keys`.
  virtual Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                               std::chrono::milliseconds timeout) = 0;
  // Adds delta to the decimal integer under key (absent = 0); returns the sum.
  virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
  // True when every key exists; never waits.
  virtual Result<bool> check(const std::vector<std::string>& keys) = 0;
  // True when the key existed.
  virtual Result<bool> remove(const std::string& key) = 0;
};

}  // namespace hvd::common
