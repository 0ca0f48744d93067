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
//
// Elastic recovery (docs/gpu.md, "Elastic recovery: shrink"): shrink()
// tells the route which members the set lost. Device ops fail as after
// abort(); a transport that can shrink (ShrinkableTransport: NCCL's
// ncclCommShrink) makes the survivors' transport from itself, on a thread
// of the route's own, hands it to the request's keep() and is aborted then
// (so the stream drains only once the shrink ended its collectives). With a
// shrink grace, an abort() that comes first (the transport failed before the
// runtime heard which members left) leaves the transport unaborted for up to
// the grace, waiting for shrink(); then it is aborted. Every path ends in
// the transport's abort within grace + the transport timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/engine/engine_stats.h"
#include "runtime/engine/executor.h"
#include "transports/device_work.h"
#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::runtime::engine {

// Creates the GPU transport and opens the device work for a set; `device`
// is the CUDA ordinal of the first device op on this rank.
using DeviceConnector = std::function<common::Result<transports::DeviceLink>(int device)>;

// What shrink() does with the survivors' transport.
struct ShrinkRequest {
  transports::TransportContext context;  // the survivors' world, this rank's place in it
  std::vector<int> excluded;             // ranks of the set that left, ascending
  // Takes the survivors' transport (on the route's thread); `device` is its
  // CUDA ordinal.
  std::function<void(std::unique_ptr<transports::Transport> transport, int device)> keep;
};

class DeviceRoute {
 public:
  // `connect` null: every device op fails, saying there is no GPU transport.
  // `shrink_grace` 0: abort() aborts the transport at once.
  DeviceRoute(DeviceConnector connect, int rank, int size, EngineCounters& counters,
              std::chrono::milliseconds shrink_grace = {});
  // Ends a grace early (the transport is aborted) and joins the thread.
  ~DeviceRoute();
  DeviceRoute(const DeviceRoute&) = delete;
  DeviceRoute& operator=(const DeviceRoute&) = delete;

  // Engine thread: the executor of device ops, creating the transport at
  // the first call; the creation's (kept) failure or the abort's reason.
  common::Result<Executor*> executor(int device);

  // Any thread: aborts the transport if it exists (after the grace, see
  // above), and any created later.
  void abort(const common::Status& reason);

  // Any thread: the set lost the members request.excluded (above). When
  // there is no transport, or it cannot shrink, or it was aborted already,
  // this is abort(reason) and request.keep is never called.
  void shrink(const common::Status& reason, ShrinkRequest request);

  // Any thread: returns once no grace is running: the shrink that was asked
  // for has begun (the destructor then waits for its end), or the transport
  // was aborted (at most the grace and a second).
  void settle();

  // The transport's name once created ("" before), for diagnostics.
  std::string name() const;

 private:
  // mu_ held: device ops fail from now on with `reason` (the first wins).
  void refuse_locked(const common::Status& reason);
  // mu_ held: aborts the transport now, unless a retirement runs.
  void abort_transport_locked();
  // mu_ held: aborts it and wakes settle() (the retirement's end too).
  void end_transport_locked();
  // mu_ held: starts the thread that shrinks (or, after the grace, aborts).
  void retire_locked();
  void retire();  // the thread

  DeviceConnector connect_;
  const int rank_;
  const int size_;
  EngineCounters& counters_;
  const std::chrono::milliseconds shrink_grace_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable changed_;
  bool tried_ = false;
  int device_ = -1;          // the transport's CUDA ordinal
  common::Status failure_;   // the creation's failure, kept
  common::Status aborted_;   // OK until abort()
  std::unique_ptr<transports::Transport> transport_;
  std::unique_ptr<Executor> executor_;  // over *transport_ and the link's work
  bool transport_aborted_ = false;
  std::optional<ShrinkRequest> shrink_;  // asked for, not yet taken by the thread
  bool shrinking_ = false;              // the thread took it
  bool stopping_ = false;               // the destructor ends a grace
  std::thread retiring_;                // shrinks or waits out the grace
};

}  // namespace hvd::runtime::engine
