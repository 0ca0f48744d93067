// A process set's data path for device (CUDA) ops: the GPU transport, the
// device work of the same device (transports/device_work.h) and an Executor
// over both (its DeviceDataPlane: fusion buffer and outputs in device
// memory, the ops' stream), beside the set's CPU transport (which keeps carrying the
// negotiation and the CPU ops). Created on the engine thread at the set's
// first device op. Every rank of the set runs the same responses in the
// same order (the negotiated plan), so every rank creates it at the same
// point, and a failure to create it is remembered: every later device op
// fails with the same Status, on every rank alike, without another attempt
// (retrying on some ranks only would leave the others waiting). CPU ops
// never touch it.
//
// abort() (any thread) reaches the transport once it exists; one created
// after the abort is aborted at once. A creation in progress is not
// interrupted: it ends within the transport timeout.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/executor.h"
#include "transports/device_work.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

// Creates the GPU transport and opens the device work for a set; `device`
// is the CUDA ordinal of the first device op on this rank.
using DeviceConnector = std::function<common::Result<transports::DeviceLink>(int device)>;

class DeviceRoute {
 public:
  // `connect` null: every device op fails, saying there is no GPU transport.
  DeviceRoute(DeviceConnector connect, int rank, int size, EngineCounters& counters);
  DeviceRoute(const DeviceRoute&) = delete;
  DeviceRoute& operator=(const DeviceRoute&) = delete;

  // Engine thread: the executor of device ops, creating the transport at
  // the first call; the creation's (kept) failure or the abort's reason.
  common::Result<Executor*> executor(int device);

  // Any thread: aborts the transport if it exists, and any created later.
  void abort(const common::Status& reason);

  // The transport's name once created ("" before), for diagnostics.
  std::string name() const;

 private:
  DeviceConnector connect_;
  const int rank_;
  const int size_;
  EngineCounters& counters_;

  mutable std::mutex mu_;  // guards everything below
  bool tried_ = false;
  common::Status failure_;   // the creation's failure, kept
  common::Status aborted_;   // OK until abort()
  std::unique_ptr<transports::Transport> transport_;
  std::unique_ptr<Executor> executor_;  // over *transport_ and the link's work
};

}  // namespace hvd::runtime::engine
