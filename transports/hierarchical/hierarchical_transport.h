// Collectives for worlds that span hosts with several ranks each: allreduce
// in three steps — a reduce-scatter among the ranks of each host (shm), an
// allreduce of each rank's slice with the ranks of the same local rank on
// the other hosts (gloo, every slice in parallel), an allgather among the
// ranks of each host (shm) — so each byte crosses the network once per host
// instead of once per rank. The other ops run on a flat gloo world of every
// rank. Needs the same number of ranks on every host (factory.h checks).
//
// The same three steps serve device (CUDA) buffers (device_hierarchical.h):
// local and flat are then device transports, cross a CPU transport staged
// through pinned host memory (staging/), and this rank's slice lives in
// device memory from the device work. set_stream() reaches every part that
// takes a stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "transports/device_work.h"
#include "transports/transport_base.h"

namespace hvd::transports::hierarchical {

class HierarchicalTransport final : public TransportBase, public StreamedTransport {
 public:
  // local: this host's ranks; cross: this local rank's peers on the other
  // hosts (by host); flat: every rank of the world. `device` null: buffers
  // are host memory; else they are its device's memory, and so is the slice.
  HierarchicalTransport(std::unique_ptr<Transport> local, std::unique_ptr<Transport> cross,
                        std::unique_ptr<Transport> flat,
                        std::shared_ptr<DeviceWork> device = nullptr,
                        std::string name = "hierarchical");
  ~HierarchicalTransport() override;
  HierarchicalTransport(const HierarchicalTransport&) = delete;
  HierarchicalTransport& operator=(const HierarchicalTransport&) = delete;

  std::string_view name() const override;
  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }

  void set_stream(void* stream) override;
  // The first asynchronous failure of the parts (local, cross, flat), which
  // fails this transport for good too.
  Status async_error() override;
  // The local (shm) transport's: the allreduce's host steps run there.
  std::vector<Tunable> tunables() const override { return local_->tunables(); }
  Status set_tunable(std::string_view tunable, int64_t value) override {
    return local_->set_tunable(tunable, value);
  }

 private:
  Status do_allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status do_broadcast(Buffer data, int root) override;
  Status do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                      std::span<const int64_t> recv_counts) override;
  Status do_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                          DataType type, ReduceOp op) override;
  Status do_barrier() override;
  // No average for allreduce (the engine divides: transport.h).
  Status check_reduction(Reduction collective, DataType type, ReduceOp op) const override;
  // The base's, but an OK reason leaves the reason empty.
  Status aborted_status(const Status& reason, const Status& earlier) const override;
  // Aborts the three parts with `reason`.
  void on_abort(const Status& reason, const Status& aborted) override;

  // At least `bytes` for this rank's slice: host memory, or device memory.
  common::Result<void*> slice(size_t bytes);

  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> cross_;
  std::unique_ptr<Transport> flat_;
  std::shared_ptr<DeviceWork> device_;
  const std::string name_;
  std::vector<std::byte> host_slice_;  // this rank's part of an allreduce (host buffers)
  void* device_slice_ = nullptr;       // the same for device buffers
  void* stream_ = nullptr;             // the ops' stream (set_stream)
  size_t device_capacity_ = 0;
};

}  // namespace hvd::transports::hierarchical
