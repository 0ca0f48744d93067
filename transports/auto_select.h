// The CPU transport "auto" (the default of HVD_CPU_TRANSPORT): chosen per
// world from where its ranks sit (layout.h), the same on every rank:
//  - every rank on one host: shm (ranks on one host never touch TCP);
//  - several hosts with the same number of ranks each, more than one:
//    hierarchical (shm inside each host, gloo across);
//  - otherwise (one rank per host, uneven hosts): gloo.
// The choice is logged at debug level; a transport that then fails to
// connect fails the world (no fallback hides it).
#pragma once

#include <memory>

#include "transports/registry.h"

namespace hvd::transports {

inline constexpr char kAutoTransport[] = "auto";

Result<std::unique_ptr<Transport>> create_auto(const TransportContext& context);

// Adds "auto" (DeviceKind::kCpu) to the registry.
void register_auto(TransportRegistry& registry);

}  // namespace hvd::transports
