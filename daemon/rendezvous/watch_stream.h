// One Rendezvous.Watch stream, held without a thread (gRPC's callback API;
// issue 31): it writes its subscription's events of the watcher's round and
// later as MembershipEvents publishes them (Subscription::on_change), one
// write at a time, and ends with CANCELLED "the rendezvous is closing" at
// close() or "the watcher went away" when the client leaves. No polling:
// nothing runs for a stream between events. It deletes itself when gRPC is
// done with it (the subscription ends then).
#pragma once

#include <grpcpp/support/server_callback.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "daemon/rendezvous/membership_events.h"
#include "hvd/v1/rendezvous.pb.h"

namespace hvd::daemon {

// The event a watcher is sent for `change`: member ranks ascending.
hvd::v1::MembershipEvent to_proto(const MembershipChange& change);

class WatchStream final : public grpc::ServerWriteReactor<hvd::v1::MembershipEvent> {
 public:
  // Writes what `subscription` holds and gets of rounds from `round` on.
  WatchStream(std::unique_ptr<MembershipEvents::Subscription> subscription, int64_t round);
  // A stream refused before it starts: it ends with `refusal`.
  explicit WatchStream(grpc::Status refusal);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // What the subscription's notifications reach while the stream lives.
  struct Shared {
    std::recursive_mutex mu;  // a write's completion may run inline
    WatchStream* stream = nullptr;
  };
  // Under shared_->mu: the next event's write, or the end.
  void pump_locked();
  void finish_locked(grpc::Status status);

  std::shared_ptr<Shared> shared_;
  std::unique_ptr<MembershipEvents::Subscription> subscription_;
  const int64_t round_;
  hvd::v1::MembershipEvent out_;
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> finish_after_write_;
};

}  // namespace hvd::daemon
