// The rendezvous key-value store's key layout shared by the workers' runtime
// and the Rendezvous service: every key a worker sets for rendezvous round
// N — its transports' addresses, process sets' — starts with
// round_key_prefix(N). Once round N+1 has formed, every worker has left
// round N, and the service deletes round N's keys (daemon/rendezvous/rendezvous_service.cc).
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>

namespace hvd::daemon {

// The most keys one Get or Check call may name (the service refuses more:
// RESOURCE_EXHAUSTED); RendezvousClient asks for more in several calls.
inline constexpr size_t kMaxKeysPerCall = 1024;

inline std::string round_key_prefix(int64_t round) { return "round" + std::to_string(round) + "/"; }

// Set by the service (to the reason) once round N lost a member: a worker
// whose transports of round N failed to connect rejoins when it is there.
inline std::string round_lost_key(int64_t round) { return round_key_prefix(round) + "lost"; }

}  // namespace hvd::daemon
