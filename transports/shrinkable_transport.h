// Optional extension of a Transport that can make the transport of a
// smaller world in place, from the live one, without connecting anew:
// NCCL's ncclCommShrink (a plugin of ABI version 4 with shrink). Elastic
// recovery uses it for the survivors of a lost member (docs/gpu.md,
// "Elastic recovery: shrink"); a transport without it is aborted and its
// world connects anew in the next round.
#pragma once

#include <memory>
#include <span>

#include "common/status.h"
#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::transports {

class ShrinkableTransport {
 public:
  virtual ~ShrinkableTransport() = default;
  // False where shrink() is known to fail with kUnimplemented (a plugin
  // without it): the caller aborts at once instead of waiting to shrink.
  virtual bool can_shrink() const { return true; }
  // A transport for `context`'s world (the survivors, in their old order,
  // context.rank this rank's place among them) made from this one without
  // `excluded` (ranks of this world, ascending, this rank not among them).
  // This transport stays valid and is destroyed (or aborted) after. Works
  // on a transport whose collectives failed or still run (they are ended
  // first), not on an aborted one. kUnimplemented where the transport
  // cannot shrink here (the caller then aborts it and connects anew).
  // Blocks up to the context's timeout: every survivor calls it.
  virtual common::Result<std::unique_ptr<Transport>> shrink(const TransportContext& context,
                                                            std::span<const int> excluded) = 0;
};

}  // namespace hvd::transports
