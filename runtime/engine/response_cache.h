// The response cache: negotiations that repeat (the same named tensor with the
// same signature every training step) are remembered as numbered entries, so a
// rank announces a repeat by setting the entry's bit in a bit vector instead of
// sending the whole request. Every rank applies the same puts, touches and
// erases in the same order (they follow the agreed responses), so bit
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

  // The bit holding a request with the same name and signature.
  std::optional<size_t> lookup(const Request& request) const;
  // The bit holding `name`, whatever its signature.
  std::optional<size_t> find_name(const std::string& name) const;

  // Remembers `request` (replacing an entry of the same name); evicts the
  // least recently used entry when full. Returns the bit, or nullopt when
  // the cache is disabled.
  std::optional<size_t> put(const Request& request);
  // Marks the bit most recently used.
  void touch(size_t bit);
  void erase(size_t bit);
  // The request in an occupied bit.
  const Request& at(size_t bit) const;
  bool occupied(size_t bit) const;

 private:
  // implementation detail: entries vector + LRU list + name index
  size_t capacity_;
  std::vector<std::optional<Request>> entries_;
  std::list<size_t> lru_;  // front = most recently used
  std::vector<std::list<size_t>::iterator> lru_pos_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace hvd::runtime::engine
