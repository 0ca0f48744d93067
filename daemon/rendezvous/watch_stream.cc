#include "daemon/rendezvous/watch_stream.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace hvd::daemon {

hvd::v1::MembershipEvent to_proto(const MembershipChange& change) {
  hvd::v1::MembershipEvent event;
  event.set_sequence(change.sequence);
  event.set_round(change.round);
  event.set_kind(change.kind == MembershipChange::Kind::kAdded ? hvd::v1::MembershipEvent::ADDED
                                                               : hvd::v1::MembershipEvent::REMOVED);
  for (const auto& host : change.hosts) event.add_hosts(host);
  for (int slot : change.slots) event.add_slots(slot);
  for (int slot : change.member_slots) event.add_member_slots(slot);
  std::vector<int> ranks = change.member_ranks;
  std::sort(ranks.begin(), ranks.end());
  for (int rank : ranks) event.add_member_ranks(rank);
  return event;
}

WatchStream::WatchStream(std::unique_ptr<MembershipEvents::Subscription> subscription,
                         int64_t round)
    : shared_(std::make_shared<Shared>()), subscription_(std::move(subscription)), round_(round) {
  std::lock_guard lock(shared_->mu);
  shared_->stream = this;
  subscription_->on_change([shared = shared_] {
    std::lock_guard lock(shared->mu);
    if (shared->stream != nullptr) shared->stream->pump_locked();
  });
  pump_locked();
}

WatchStream::WatchStream(grpc::Status refusal) : shared_(std::make_shared<Shared>()), round_(0) {
  finished_ = true;
  Finish(std::move(refusal));
}

void WatchStream::pump_locked() {
  if (finished_ || writing_) return;
  for (;;) {
    auto change = subscription_->next(std::chrono::milliseconds(0));
    if (!change) {
      if (subscription_->closed()) {
        finish_locked({grpc::StatusCode::CANCELLED, "the rendezvous is closing"});
      }
      return;
    }
    // Changes of an earlier round are part of the watcher's round already.
    if (change->round < round_) continue;
    out_ = to_proto(*change);
    writing_ = true;
    StartWrite(&out_);
    return;
  }
}

void WatchStream::finish_locked(grpc::Status status) {
  if (finished_) return;
  if (writing_) {
    if (!finish_after_write_) finish_after_write_ = std::move(status);
    return;
  }
  finished_ = true;
  Finish(std::move(status));
}

void WatchStream::OnWriteDone(bool ok) {
  std::lock_guard lock(shared_->mu);
  writing_ = false;
  if (finish_after_write_) {
    finish_locked(std::move(*finish_after_write_));
    return;
  }
  if (!ok) {
    finish_locked({grpc::StatusCode::CANCELLED, "the watcher went away"});
    return;
  }
  pump_locked();
}

void WatchStream::OnCancel() {
  std::lock_guard lock(shared_->mu);
  finish_locked({grpc::StatusCode::CANCELLED, "the watcher went away"});
}

void WatchStream::OnDone() {
  {
    std::lock_guard lock(shared_->mu);
    shared_->stream = nullptr;
  }
  subscription_.reset();  // may be null: refused
  delete this;
}

}  // namespace hvd::daemon
