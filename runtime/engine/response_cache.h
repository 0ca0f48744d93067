// The response cache: negotiations that repeat (the same named tensor with the
// same signature every training step) are remembered in numbered slots, so a
// rank announces a repeat by setting the slot's bit in a bit vector instead of
// sending the whole request. Every rank applies the same puts, touches and
// erases in the same order (they follow the agreed responses), so slot
// numbers agree across ranks without extra messages. Least recently used
// entries are evicted when full.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

class ResponseCache {
 public:
  // capacity 0 disables the cache (every lookup misses, put does nothing).
  explicit ResponseCache(size_t capacity);

  size_t capacity() const { return capacity_; }
  size_t size() const;

  // The slot holding a request with the same name and signature.
  std::optional<size_t> lookup(const Request& request) const;
  // The slot holding `name`, whatever its signature.
  std::optional<size_t> find_name(const std::string& name) const;

  // Remembers `request` (replacing an entry of the same name); evicts the
  // least recently used entry when full. Returns the slot, or nullopt when
  // the cache is disabled.
  std::optional<size_t> put(const Request& request);
  // Marks the slot most recently used.
  void touch(size_t slot);
  void erase(size_t slot);
  // The request in an occupied slot.
  const Request& at(size_t slot) const;
  bool occupied(size_t slot) const;

 private:
  // implementation detail: slots vector + LRU list + name index
  size_t capacity_;
  std::vector<std::optional<Request>> slots_;
  std::list<size_t> lru_;  // front = most recently used
  std::vector<std::list<size_t>::iterator> lru_pos_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace hvd::runtime::engine
