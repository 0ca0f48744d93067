// The shm transport's entry points: CPU collectives through one POSIX
// shared-memory segment, for worlds whose ranks are all on one host.
#pragma once

#include <memory>

#include "transports/registry.h"

namespace hvd::transports::shm {

inline constexpr char kName[] = "shm";

// Creates or attaches this world's segment (blocks until every rank has
// attached or the timeout passes). kFailedPrecondition when the ranks are
// not all on one host; context.store may be null only when context.size == 1.
Result<std::unique_ptr<Transport>> create(const TransportContext& context);

}  // namespace hvd::transports::shm
