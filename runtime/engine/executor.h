// Runs agreed ops on a process set's transport: one fused allreduce batch or
// one other op per call, writing each op's result (and any engine-allocated
// output) into its Response. Allreduce: pack into the fusion buffer (times
// prescale), one transport allreduce, unpack (Average divides by the set's
// size, then postscale); a batch of one skips the fusion buffer and reduces
// in place in the op's output. A rank that joined without the op contributes
// the identity of the reduction (zeros for sums) and no rows to gathers.
//
// A set has one Executor over its CPU transport, with the host data plane,
// and, once it has device ops, one over its GPU transport with the device
// data plane (device_route.h, device_data_plane.h): the fusion buffer, the
// scaling and engine-allocated outputs are then in device memory, on the
// device's stream, and every batch ends with the plane's end(): its
// completion event (launched()), which the set engine hands with the
// batch's ops to its DeviceCompletions.
//
// Errors: a transport error that leaves the transport failed is returned
// (the engine then fails everything); an invalid argument the transport
// refused (e.g. a dtype it cannot reduce) fails just the batch's ops, on
// every rank alike, and the engine goes on.
#pragma once

#include <span>
#include <string>

#include "common/status.h"
#include <memory>

#include "runtime/engine/data_plane.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/response.h"
#include "runtime/engine/timeline.h"
#include "transports/device_work.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

class Executor {
 public:
  // `plane` null: the host data plane (CPU ops).
  Executor(transports::Transport& transport, int rank, int size, EngineCounters& counters,
           std::unique_ptr<DataPlane> plane = nullptr,
           transports::StreamedTransport* streamed = nullptr);

  // `batch`: responses without a decided error; one op, or allreduces the
  // fusion planner put together. `timeline` may be null; `row_prefix` is put
  // before tensor names on the timeline.
  common::Status run(std::span<Response* const> batch, Timeline* timeline,
                     const std::string& row_prefix);
  // The last run()'s completion event: a device batch launched on a device
  // with events (also when run() failed midway, when it could be recorded);
  // null otherwise (host ops, or a device batch that was waited for).
  const std::shared_ptr<DeviceEvent>& launched() const { return launched_; }
  // The GPU transport's asynchronous errors (null: a host executor or a
  // transport without them).
  transports::StreamedTransport* streamed() const { return streamed_; }

 private:
  common::Status dispatch(std::span<Response* const> batch, OpType type);
  // Device batches: the streams to begin() with; the end's synchronize().
  common::Status begin_device(std::span<Response* const> batch);
  common::Status allreduce(std::span<Response* const> batch);
  common::Status allgather(Response& resp);
  common::Status broadcast(Response& resp);
  common::Status alltoall(Response& resp);
  common::Status reducescatter(Response& resp);
  // The transport's status for an op: OK; an argument error (op-level,
  // recorded in the batch's responses and turned into OK); or fatal.
  common::Status op_result(common::Status status, std::span<Response* const> batch);

  transports::Transport& transport_;
  int rank_;
  int size_;
  EngineCounters& counters_;
  std::unique_ptr<DataPlane> plane_;
  transports::StreamedTransport* streamed_;
  std::shared_ptr<DeviceEvent> launched_;
  std::vector<OpStream> streams_;
  std::vector<FusionPart> parts_;
  Timeline* timeline_ = nullptr;
  const std::string* prefix_ = nullptr;
};

}  // namespace hvd::runtime::engine
