#include "daemon/rendezvous/membership_events.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

namespace hvd::daemon {

struct MembershipEvents::Subscription::Queue {
  std::deque<MembershipChange> events;
  std::function<void()> notify;  // on_change()
};

struct MembershipEvents::Subscription::State {
  mutable std::mutex mu;
  std::condition_variable changed;
  bool closed = false;
  int64_t sequence = 0;
  std::vector<std::shared_ptr<Queue>> queues;

  // Under mu.
  void push_locked(Queue& queue, MembershipChange change);
};

namespace {

template <typename T>
void add_missing(std::vector<T>& into, const std::vector<T>& from) {
  for (const T& v : from) {
    if (std::find(into.begin(), into.end(), v) == into.end()) into.push_back(v);
  }
}

// One event per (kind, round), in the order of their first occurrence.
std::deque<MembershipChange> coalesce(std::deque<MembershipChange> events) {
  std::deque<MembershipChange> out;
  for (auto& e : events) {
    auto same = std::find_if(out.begin(), out.end(), [&](const MembershipChange& o) {
      return o.kind == e.kind && o.round == e.round;
    });
    if (same == out.end()) {
      out.push_back(std::move(e));
      continue;
    }
    same->sequence = std::max(same->sequence, e.sequence);
    add_missing(same->hosts, e.hosts);
    add_missing(same->slots, e.slots);
    add_missing(same->member_slots, e.member_slots);
    add_missing(same->member_ranks, e.member_ranks);
  }
  return out;
}

}  // namespace

void MembershipEvents::Subscription::State::push_locked(Queue& queue, MembershipChange change) {
  queue.events.push_back(std::move(change));
  if (queue.events.size() > kMaxQueued) queue.events = coalesce(std::move(queue.events));
}

MembershipEvents::Subscription::Subscription(std::shared_ptr<State> state,
                                             std::shared_ptr<Queue> queue)
    : state_(std::move(state)), queue_(std::move(queue)) {}

MembershipEvents::Subscription::~Subscription() {
  std::lock_guard lock(state_->mu);
  std::erase(state_->queues, queue_);
  queue_->notify = nullptr;
}

void MembershipEvents::Subscription::deliver(MembershipChange change) {
  std::function<void()> notify;
  {
    std::lock_guard lock(state_->mu);
    change.sequence = ++state_->sequence;
    state_->push_locked(*queue_, std::move(change));
    notify = queue_->notify;
  }
  state_->changed.notify_all();
  if (notify) notify();
}

void MembershipEvents::Subscription::on_change(std::function<void()> notify) {
  std::lock_guard lock(state_->mu);
  queue_->notify = std::move(notify);
}

std::optional<MembershipChange> MembershipEvents::Subscription::next(
    std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  state_->changed.wait_for(lock, timeout,
                           [&] { return !queue_->events.empty() || state_->closed; });
  if (queue_->events.empty()) return std::nullopt;
  MembershipChange change = std::move(queue_->events.front());
  queue_->events.pop_front();
  return change;
}

bool MembershipEvents::Subscription::closed() const {
  std::lock_guard lock(state_->mu);
  return state_->closed;
}

MembershipEvents::MembershipEvents() : state_(std::make_shared<Subscription::State>()) {}

MembershipEvents::~MembershipEvents() { close(); }

std::unique_ptr<MembershipEvents::Subscription> MembershipEvents::subscribe() {
  auto queue = std::make_shared<Subscription::Queue>();
  {
    std::lock_guard lock(state_->mu);
    state_->queues.push_back(queue);
  }
  return std::unique_ptr<Subscription>(new Subscription(state_, std::move(queue)));
}

int64_t MembershipEvents::publish(MembershipChange change) {
  int64_t sequence = 0;
  std::vector<std::function<void()>> notify;
  {
    std::lock_guard lock(state_->mu);
    sequence = change.sequence = ++state_->sequence;
    for (auto& queue : state_->queues) {
      state_->push_locked(*queue, change);
      if (queue->notify) notify.push_back(queue->notify);
    }
  }
  state_->changed.notify_all();
  for (auto& n : notify) n();
  return sequence;
}

void MembershipEvents::close() {
  std::vector<std::function<void()>> notify;
  {
    std::lock_guard lock(state_->mu);
    state_->closed = true;
    for (auto& queue : state_->queues) {
      if (queue->notify) notify.push_back(queue->notify);
    }
  }
  state_->changed.notify_all();
  for (auto& n : notify) n();
}

size_t MembershipEvents::subscribers() const {
  std::lock_guard lock(state_->mu);
  return state_->queues.size();
}

}  // namespace hvd::daemon
