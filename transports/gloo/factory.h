// The gloo transport's entry points: CPU collectives over gloo's TCP device,
// peers found through the rendezvous key-value store.
#pragma once

#include <memory>

#include "transports/registry.h"

namespace hvd::transports::gloo {

inline constexpr char kName[] = "gloo";

// Connects this rank to every other rank of the world described by
// `context` (blocks until all have connected or the timeout passes).
// context.store may be null only when context.size == 1.
Result<std::unique_ptr<Transport>> create(const TransportContext& context);

}  // namespace hvd::transports::gloo
