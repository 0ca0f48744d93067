// Transport over gloo: a full mesh of TCP pairs (one per peer) built through
// the rendezvous store, and gloo's collective algorithms on top.
//
// Threading: one caller at a time (the runtime serialises collectives),
// abort() from any thread; gloo's device runs its own I/O thread.
// Errors: every gloo exception becomes a Status naming the op and this rank,
// which fails the transport for good (TransportBase keeps it: gloo's pairs
// are in an unknown state after an I/O error, so the world must be rebuilt).
// Invalid arguments are reported without touching the network and without
// failing the transport.
// Abort: gloo (Debian 12's 2022 snapshot) has no call that wakes a waiting
// collective: Context::closeConnections() closes the sockets but leaves the
// waiters to their timeout, and what fails them (tcp::Pair's
// signalException) is protected, behind a header the package lacks. Its I/O
// thread does fail every pending operation of a pair whose socket reaches
// end of file, so the transport keeps its own descriptor of each pair's
// socket (found by the pair's address once connected) and abort() shuts
// them down. A receive or send already in the middle of a message when the
// socket goes (a peer that stopped mid-message) is not among those gloo
// fails: abort() then fails those too (fail_pairs, pair_abort.h). A peer
// that dies mid-message without an abort here still ends the call only at
// the transport timeout.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "transports/registry.h"
#include "transports/transport_base.h"

namespace hvd::transports::gloo {

class GlooTransport final : public TransportBase {
 public:
  static Result<std::unique_ptr<Transport>> connect(const TransportContext& context);
  ~GlooTransport() override;
  GlooTransport(const GlooTransport&) = delete;
  GlooTransport& operator=(const GlooTransport&) = delete;

  std::string_view name() const override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

 private:
  GlooTransport(int rank, int size, std::chrono::milliseconds timeout,
                std::shared_ptr<::gloo::Context> context, std::vector<int> sockets);

  Status do_allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status do_broadcast(Buffer data, int root) override;
  Status do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                      std::span<const int64_t> recv_counts) override;
  Status do_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                          DataType type, ReduceOp op) override;
  Status do_barrier() override;
  // reduce_functions.h's: what gloo's reductions can run.
  Status check_reduction(Reduction collective, DataType type, ReduceOp op) const override;
  // Logs the failure and shuts the sockets down (peers see this rank leave).
  void on_failure(const Status& error) override;
  // Shuts the sockets down and fails the messages in progress.
  void on_abort(const Status& reason, const Status& aborted) override;

  // Runs `body` (which calls into gloo): any exception becomes a Status
  // "gloo <op> failed on rank R of S: <what>".
  template <typename Body>
  Status guarded(std::string_view op, Body&& body);
  void shut_down_sockets() const;
  // alltoallv without the argument checks (reducescatter reuses it).
  void exchange(const void* in, std::span<const int64_t> send_counts, void* out,
                std::span<const int64_t> recv_counts);
  uint32_t next_tag() { return tag_++; }

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<::gloo::Context> context_;
  // This transport's own descriptors of the pairs' sockets (dup()s: gloo may
  // close its own at any time, these stay valid until the destructor).
  // Written only by the constructor.
  const std::vector<int> sockets_;
  uint32_t tag_ = 0;
};

}  // namespace hvd::transports::gloo
