// A gloo context connected to every peer the way gloo's connectFullMesh
// connects one (each rank publishes one address per peer under its rank's
// key; each pair then connects), but abortable and within one deadline.
//
// Why not connectFullMesh: a pair waits for its peer for 5x the context's
// timeout (gloo's tcp::Pair::waitUntilConnected), and nothing ends that wait
// early. A peer that died after publishing its addresses (an elastic round
// lost while it connects) held every rank for 150 s at the default transport
// timeout. Here the whole connect ends at `timeout`, or at once when the
// caller's ConnectAbort fires: the half-connected pairs are closed, which
// wakes the pair being waited for.
#pragma once

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>

#include "common/status.h"
#include "transports/connect_abort.h"

namespace hvd::transports::gloo {

class MeshContext final : public ::gloo::Context {
 public:
  MeshContext(int rank, int size) : ::gloo::Context(rank, size) {}

  // Connects every pair through `store`. A non-OK Status when `abort` (may
  // be null) fired (its code, naming the reason) or the deadline passed
  // (kTimeout, naming the peers not connected); gloo's and the store's
  // failures are thrown as gloo throws them (::gloo::IoException, ...).
  common::Status connect(::gloo::rendezvous::Store& store,
                         const std::shared_ptr<::gloo::transport::Device>& device,
                         std::chrono::milliseconds timeout, ConnectAbort* abort);
};

}  // namespace hvd::transports::gloo
