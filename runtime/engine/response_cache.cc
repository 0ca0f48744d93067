#include "runtime/engine/response_cache.h"

#include <stdexcept>

// Slots are numbered 0..capacity-1. `slots_` grows on demand up to the
// capacity (so an unused cache costs nothing); `lru_pos_` runs parallel to it
// and is valid only for occupied slots. A new name takes the lowest free slot;
// when every slot is occupied, the least recently used entry (the back of
// `lru_`) is evicted and its slot reused. Everything depends only on the
// sequence of calls, so ranks that make the same calls get the same slots.
//
// Misuse: at() and touch() of a slot that is not occupied throw
// std::logic_error; erase() of a slot that is not occupied does nothing.

namespace hvd::runtime::engine {

ResponseCache::ResponseCache(size_t capacity) : capacity_(capacity) {}

size_t ResponseCache::size() const { return by_name_.size(); }

std::optional<size_t> ResponseCache::lookup(const Request& request) const {
  auto slot = find_name(request.name);
  if (slot && same_signature(*slots_[*slot], request)) return slot;
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
    size_t slot = *existing;
    slots_[slot] = request;
    touch(slot);
    return slot;
  }
  size_t slot = 0;
  if (by_name_.size() < slots_.size()) {
    // A hole left by erase(): the lowest one.
    while (slots_[slot].has_value()) ++slot;
  } else if (slots_.size() < capacity_) {
    slot = slots_.size();
    slots_.emplace_back();
    lru_pos_.emplace_back();
  } else {
    slot = lru_.back();
    erase(slot);
  }
  slots_[slot] = request;
  lru_.push_front(slot);
  lru_pos_[slot] = lru_.begin();
  by_name_.emplace(request.name, slot);
  return slot;
}

void ResponseCache::touch(size_t slot) {
  if (!occupied(slot)) {
    throw std::logic_error("response cache: touch of unoccupied slot " + std::to_string(slot));
  }
  lru_.splice(lru_.begin(), lru_, lru_pos_[slot]);
}

void ResponseCache::erase(size_t slot) {
  if (!occupied(slot)) return;
  by_name_.erase(slots_[slot]->name);
  lru_.erase(lru_pos_[slot]);
  slots_[slot].reset();
}

const Request& ResponseCache::at(size_t slot) const {
  if (!occupied(slot)) {
    throw std::logic_error("response cache: slot " + std::to_string(slot) + " is not occupied");
  }
  return *slots_[slot];
}

bool ResponseCache::occupied(size_t slot) const {
  return slot < slots_.size() && slots_[slot].has_value();
}

}  // namespace hvd::runtime::engine
