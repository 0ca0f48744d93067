// Transport over gloo: a full mesh of TCP pairs (one per peer) built through
// the rendezvous store, and gloo's collective algorithms on top.
//
// Threading: one caller at a time (the runtime serialises collectives),
// abort() from any thread; gloo's device runs its own I/O thread.
// Errors: every gloo exception becomes a Status naming the op and this rank;
// the first one is kept and returned by every later call (gloo's pairs are
// in an unknown state after an I/O error, so the world must be rebuilt).
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
#include <mutex>
#include <string_view>
#include <vector>

#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::transports::gloo {

class GlooTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> connect(const TransportContext& context);
  ~GlooTransport() override;
  GlooTransport(const GlooTransport&) = delete;
  GlooTransport& operator=(const GlooTransport&) = delete;

  std::string_view name() const override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status broadcast(Buffer data, int root) override;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) override;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) override;
  Status barrier() override;
  void abort(Status reason) override;

 private:
  GlooTransport(int rank, int size, std::chrono::milliseconds timeout,
                std::shared_ptr<::gloo::Context> context, std::vector<int> sockets);

  // Runs `body` (which calls into gloo) unless the transport already failed;
  // turns any exception into the transport's lasting failure.
  template <typename Body>
  Status run(std::string_view op, Body&& body);
  // The lasting failure (OK while none).
  Status failure() const;
  // Records `error` as the lasting failure unless there is one already (an
  // abort's, say), shuts the sockets down, and returns the lasting failure.
  Status fail(Status error);
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
  mutable std::mutex mutex_;  // guards failure_ and aborted_
  Status failure_;
  bool aborted_ = false;
  uint32_t tag_ = 0;
};

}  // namespace hvd::transports::gloo
