// Transport over gloo: a full mesh of TCP pairs (one per peer) built through
// the rendezvous store, and gloo's collective algorithms on top.
//
// Threading: one caller at a time (the runtime serialises collectives);
// gloo's device runs its own I/O thread.
// Errors: every gloo exception becomes a Status naming the op and this rank;
// the first one is kept and returned by every later call (gloo's pairs are
// in an unknown state after an I/O error, so the world must be rebuilt).
// Invalid arguments are reported without touching the network and without
// failing the transport.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::transports::gloo {

class GlooTransport final : public Transport {
 public:
  static Result<std::unique_ptr<Transport>> connect(const TransportContext& context);

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

 private:
  GlooTransport(int rank, int size, std::chrono::milliseconds timeout,
                std::shared_ptr<::gloo::Context> context);

  // Runs `body` (which calls into gloo) unless the transport already failed;
  // turns any exception into the transport's lasting failure.
  template <typename Body>
  Status run(std::string_view op, Body&& body);
  // alltoallv without the argument checks (reducescatter reuses it).
  void exchange(const void* in, std::span<const int64_t> send_counts, void* out,
                std::span<const int64_t> recv_counts);
  uint32_t next_tag() { return tag_++; }

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<::gloo::Context> context_;
  Status failure_;
  uint32_t tag_ = 0;
};

}  // namespace hvd::transports::gloo
