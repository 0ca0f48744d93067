// Ends a transport's connect early: the world it connects is already lost
// (an elastic round whose member died after writing its keys), so waiting
// for that member until the transport timeout only delays the next round.
//
// The caller of TransportRegistry::create keeps one per connect and fires it
// from any thread; a factory subscribes what it waits on (gloo closes its
// half-connected pairs; shm's attach loop checks fired()). Firing is sticky:
// the first reason wins, and a subscriber added after the fire is called at
// once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "common/status.h"

namespace hvd::transports {

class ConnectAbort {
 public:
  using Callback = std::function<void(const common::Status&)>;

  // Unsubscribes when destroyed; after that its callback is never called
  // (nor running: the destructor waits for a call in progress).
  class Subscription {
   public:
    Subscription() = default;
    Subscription(ConnectAbort* owner, uint64_t id) : owner_(owner), id_(id) {}
    ~Subscription() { reset(); }
    Subscription(Subscription&& other) noexcept { *this = std::move(other); }
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    void reset();

   private:
    ConnectAbort* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  // Records `reason` (an OK one reads as kAborted) and calls every
  // subscriber with it, on this thread. Later fires are ignored.
  void fire(common::Status reason);
  bool fired() const;
  common::Status reason() const;  // OK while not fired

  // `callback` runs on the firing thread (at once when already fired); it
  // must not subscribe or unsubscribe on this object.
  [[nodiscard]] Subscription subscribe(Callback callback);

 private:
  void unsubscribe(uint64_t id);

  mutable std::mutex mu_;
  std::mutex calling_;  // held while callbacks run: unsubscribe waits for them
  common::Status reason_;
  bool fired_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Callback> callbacks_;
};

}  // namespace hvd::transports
