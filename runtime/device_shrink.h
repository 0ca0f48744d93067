// Elastic recovery of the global process set's GPU transport by shrink
// (docs/gpu.md, "Elastic recovery: shrink"; NCCL's ncclCommShrink, the
// pattern of torch's shrink_group). When the membership watch names the
// members of this round that left the job, the survivors' DeviceRoutes make
// the survivors' transport from the live one (DeviceRoute::shrink) instead
// of aborting it, and hand it here; it outlives this round's Runtime
// (hvd.shutdown()) and is used again by the next round's, at its first
// device op, when every rank of the new world keeps the transport of the
// same shrink at its own place. Otherwise every rank destroys what it kept
// and connects anew, and says so. One per process.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/engine/device_route.h"
#include "runtime/rebound_store.h"
#include "transports/device_work.h"
#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::runtime {

class DeviceShrink {
 public:
  static DeviceShrink& process();

  // The Runtime of `round` started (`store`: its store, alive until
  // unbind()) / is shutting down: where a kept transport's store calls go.
  void bind(common::Store* store, int64_t round);
  void unbind();

  // For the global set's DeviceRoute (rank `set_context.rank` of
  // `set_context.size`) when the set's ranks `excluded` (ascending) left
  // round `round`: the survivors' world, and keep() stores their transport
  // here (replacing one kept before).
  engine::ShrinkRequest request(const transports::TransportContext& set_context,
                                std::vector<int> excluded, int64_t round);

  // At the first device op of the global set of a round after the first,
  // on every rank of it alike (collective, through context.store under
  // context.key_prefix): the kept transport with the device work of its
  // device, when every rank keeps one of the same shrink at its place in
  // this world; nullopt otherwise (what was kept is destroyed; the caller
  // connects anew). The store's failure when the exchange fails.
  common::Result<std::optional<transports::DeviceLink>> reuse(
      const transports::TransportRegistry& registry, const transports::TransportContext& context);

  // Whether a transport is kept (tests, diagnostics).
  bool holds() const;

 private:
  struct Kept {
    std::unique_ptr<transports::Transport> transport;
    int device = -1;
    int rank = 0;
    int size = 0;
    std::string shrink;  // "<round>:<excluded ranks>": the same on every survivor
    std::string said;    // the same, for log lines
  };
  // This rank's word in the exchange: the shrink it keeps a transport of
  // at its place in `context`'s world, or "-".
  static std::string word(const std::optional<Kept>& kept,
                          const transports::TransportContext& context);

  ReboundStore store_;
  mutable std::mutex mu_;
  std::optional<Kept> kept_;
};

}  // namespace hvd::runtime
