// One unary call of the Rendezvous service that waits (a Join for its round, a
// Get for its keys, a spare for its promotion) without holding a thread (gRPC's
// callback API; issue 31): the handler starts the wait in the state that
// answers it (Rounds, KvStore, HotSpares), which calls finish() when the wait
// ends; a client that goes away (OnCancel) runs the cancel function the handler
// set, which ends the wait. It deletes itself once gRPC is done with it and the
// handler has let it go (release()).
#pragma once

#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <functional>
#include <mutex>

namespace hvd::daemon {

class WaitingCall final : public grpc::ServerUnaryReactor {
 public:
  // What ends the call with a status: call it once, from any thread.
  std::function<void(grpc::Status)> finisher() {
    return [this](grpc::Status status) { Finish(std::move(status)); };
  }
  // What OnCancel runs (now, when the call was cancelled already).
  void set_cancel(std::function<void()> cancel);
  // The handler is done with it (once, after set_cancel).
  void release();

  void OnCancel() override;
  void OnDone() override { release(); }

 private:
  std::mutex mu_;
  std::function<void()> cancel_;
  bool cancelled_ = false;
  std::atomic<int> refs_{2};  // the handler's and gRPC's
};

}  // namespace hvd::daemon
