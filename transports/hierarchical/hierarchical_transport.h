// Collectives for worlds that span hosts with several ranks each: allreduce
// in three steps — a reduce-scatter among the ranks of each host (shm), an
// allreduce of each rank's slice with the ranks of the same local rank on
// the other hosts (gloo, every slice in parallel), an allgather among the
// ranks of each host (shm) — so each byte crosses the network once per host
// instead of once per rank. The other ops run on a flat gloo world of every
// rank. Needs the same number of ranks on every host (factory.h checks).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "transports/transport.h"

namespace hvd::transports::hierarchical {

class HierarchicalTransport final : public Transport {
 public:
  // local: this host's ranks; cross: this local rank's peers on the other
  // hosts (by host); flat: every rank of the world.
  HierarchicalTransport(std::unique_ptr<Transport> local, std::unique_ptr<Transport> cross,
                        std::unique_ptr<Transport> flat);

  std::string_view name() const override;
  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }

  Status allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status broadcast(Buffer data, int root) override;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) override;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) override;
  Status barrier() override;
  void abort(Status reason) override;
  // The local (shm) transport's: the allreduce's host steps run there.
  std::vector<Tunable> tunables() const override { return local_->tunables(); }
  Status set_tunable(std::string_view tunable, int64_t value) override {
    return local_->set_tunable(tunable, value);
  }

 private:
  // The first failure sticks: later calls return it.
  Status checked(const char* op, Status s);
  Status failure() const;

  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> cross_;
  std::unique_ptr<Transport> flat_;
  std::vector<std::byte> slice_;  // this rank's part of an allreduce
  mutable std::mutex mutex_;
  Status failure_;
  bool aborted_ = false;
};

}  // namespace hvd::transports::hierarchical
