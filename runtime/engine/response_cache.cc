#include "runtime/engine/response_cache.h"

#include <stdexcept>

// Bits are numbered 0..capacity-1. `entries_` grows on demand up to the
// capacity (so an unused cache costs nothing); `lru_pos_` runs parallel to it
// and is valid only for occupied bits. A new name takes the lowest free bit;
// when every bit is occupied, the least recently used entry (the back of
// `lru_`) is evicted and its bit reused. Everything depends only on the
// sequence of calls, so ranks that make the same calls get the same bits.
//
// Misuse: at() and touch() of a bit that is not occupied throw
// std::logic_error; erase() of a bit that is not occupied does nothing.

namespace hvd::runtime::engine {

ResponseCache::ResponseCache(size_t capacity) : capacity_(capacity) {}

size_t ResponseCache::size() const { return by_name_.size(); }

std::optional<size_t> ResponseCache::lookup(const Request& request) const {
  auto bit = find_name(request.name);
  if (bit && same_signature(*entries_[*bit], request)) return bit;
  return std::nullopt;
}

std::optional<size_t> ResponseCache::find_name(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> ResponseCache::put(const Request& request) {
  if (capacity_ == 0) return std::nullopt;
  if (auto existing = find_name(request.name)) {
    size_t bit = *existing;
    entries_[bit] = request;
    touch(bit);
    return bit;
  }
  size_t bit = 0;
  if (by_name_.size() < entries_.size()) {
    // A hole left by erase(): the lowest one.
    while (entries_[bit].has_value()) ++bit;
  } else if (entries_.size() < capacity_) {
    bit = entries_.size();
    entries_.emplace_back();
    lru_pos_.emplace_back();
  } else {
    bit = lru_.back();
    erase(bit);
  }
  entries_[bit] = request;
  lru_.push_front(bit);
  lru_pos_[bit] = lru_.begin();
  by_name_.emplace(request.name, bit);
  return bit;
}

void ResponseCache::touch(size_t bit) {
  if (!occupied(bit)) {
    throw std::logic_error("response cache: touch of unoccupied bit " + std::to_string(bit));
  }
  lru_.splice(lru_.begin(), lru_, lru_pos_[bit]);
}

void ResponseCache::erase(size_t bit) {
  if (!occupied(bit)) return;
  by_name_.erase(entries_[bit]->name);
  lru_.erase(lru_pos_[bit]);
  entries_[bit].reset();
}

const Request& ResponseCache::at(size_t bit) const {
  if (!occupied(bit)) {
    throw std::logic_error("response cache: bit " + std::to_string(bit) + " is not occupied");
  }
  return *entries_[bit];
}

bool ResponseCache::occupied(size_t bit) const {
  return bit < entries_.size() && entries_[bit].has_value();
}

}  // namespace hvd::runtime::engine
