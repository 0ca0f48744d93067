// The membership changes of one job, published to the workers that watch
// them (Rendezvous.Watch, proto/hvd/v1/rendezvous.proto; docs/elastic.md).
// Thread-safe: any thread publishes (Rounds when a newcomer waits to
// join a running job; RendezvousService::hosts_changed for the launcher);
// each Watch call holds one Subscription and takes its events in order.
// publish() never blocks on a subscriber: each has a bounded queue, and one
// that falls behind gets its queued events coalesced (below). close() wakes
// every subscriber at once; a Subscription may outlive the publisher.
// Private to daemon/.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hvd::daemon {

struct MembershipChange {
  enum class Kind { kAdded, kRemoved };
  int64_t sequence = 0;  // set when published: 1, 2, ... in publication order
  int64_t round = -1;    // the rendezvous round current when it happened
  Kind kind = Kind::kAdded;
  std::vector<std::string> hosts;
  std::vector<int> slots;  // hvdrun's slots (HVD_RANK) of the workers concerned
  // kRemoved: those of `slots` that are members of `round`: that round's
  // collectives can no longer complete.
  std::vector<int> member_slots;
  std::vector<int> member_ranks;  // theirs in `round`
};

class MembershipEvents {
 public:
  // A subscriber's queue holds at most this many events. One more, and the
  // queue is coalesced: one event per kind and round, with the union of
  // their hosts and slots and the latest sequence number. Nothing is lost;
  // only the count of changes is.
  static constexpr size_t kMaxQueued = 64;

  class Subscription {
   public:
    ~Subscription();  // unsubscribes
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

    // Queues `change` for this subscriber alone (the state it needs to know
    // of at subscription), with the next sequence number.
    void deliver(MembershipChange change);
    // The next queued event, waiting up to `timeout` for one; nullopt when
    // none came or, once queued events are taken, at once after close().
    std::optional<MembershipChange> next(std::chrono::milliseconds timeout);
    // close() was called.
    bool closed() const;
    // `notify` is called (on the publisher's thread, with no lock held)
    // after each event queued for this subscriber and at close(): a Watch
    // stream takes its events then (next(0ms)) instead of waiting in
    // next(). It may still run, once, as the subscription is destroyed.
    void on_change(std::function<void()> notify);

   private:
    friend class MembershipEvents;
    struct Queue;
    struct State;
    Subscription(std::shared_ptr<State> state, std::shared_ptr<Queue> queue);
    std::shared_ptr<State> state_;
    std::shared_ptr<Queue> queue_;
  };

  MembershipEvents();
  ~MembershipEvents();  // close()s
  MembershipEvents(const MembershipEvents&) = delete;
  MembershipEvents& operator=(const MembershipEvents&) = delete;

  // Events published from now on are queued for it (until it is destroyed).
  std::unique_ptr<Subscription> subscribe();
  // Queues `change` for every subscriber; its sequence number. Never blocks.
  int64_t publish(MembershipChange change);
  // Ends every subscription (current and later): their next() returns what
  // is queued, then nullopt at once. Idempotent.
  void close();
  size_t subscribers() const;

 private:
  std::shared_ptr<Subscription::State> state_;
};

}  // namespace hvd::daemon
