// The largest jobs hvd runs. hvdrun refuses bigger ones while parsing its
// command line, before it builds anything per rank (a -np of a million used
// to grow hvdrun to 22 GB); hvd-agent refuses them again in Agent.Launch.
#pragma once

namespace hvd::common {

// Workers one agent (one host) starts for one job: hvd-agent's limit per
// Launch request, and so the most slots one host may declare.
inline constexpr int kMaxWorkersPerHost = 4096;

// Workers (ranks) of one job, also its --max-np: the rendezvous watches
// ranks below this (daemon/rendezvous/liveness.h, Liveness::kMaxRanks).
inline constexpr int kMaxWorldSize = 1 << 16;

}  // namespace hvd::common
