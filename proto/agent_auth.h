// Credentials of Agent calls: every call carries an HMAC-SHA256 proof of the
// agent's shared secret instead of the secret itself, so the secret never
// travels, not even over a connection without TLS. The proof is
//
//   authorization: HVD-HMAC-SHA256 t=<unix ms>,n=<32 hex nonce>,m=<64 hex mac>
//   mac = HMAC-SHA256(secret, "hvd-agent-v1\n" + method + "\n" + t + "\n" + n)
//
// and binds the call's method, a time and a nonce. The checker accepts a
// proof once (it remembers nonces for the acceptance window) and only when t
// is within the window of its own clock, so a recorded call cannot be
// replayed later. Hosts need clocks within the window of each other (NTP).
// docs/security.md explains the design and what TLS adds.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace hvd::proto {

inline constexpr char kAgentAuthScheme[] = "HVD-HMAC-SHA256";

// The metadata value for one call of `method` (e.g. "Launch") at `now_ms`
// (milliseconds since the Unix epoch) with a 16-byte `nonce` as 32 hex chars.
std::string agent_proof(std::string_view secret, std::string_view method, int64_t now_ms,
                        std::string_view nonce_hex);

// Adds a fresh proof (current time, random nonce) to an outgoing call.
void attach_agent_proof(grpc::ClientContext& context, std::string_view secret,
                        std::string_view method);

class AgentProofChecker {
 public:
  using Clock = std::function<int64_t()>;  // unix milliseconds

  // An empty secret refuses every call. `window`: how far a proof's time may
  // be from this host's clock, either way.
  explicit AgentProofChecker(std::string secret,
                             std::chrono::milliseconds window = std::chrono::minutes(5),
                             Clock clock = nullptr);

  // OK when the metadata value carries a valid, fresh, unused proof for
  // `method`; otherwise UNAUTHENTICATED with the reason (never the secret or
  // the mac), and a warning naming the method and the peer is logged (`peer`
  // only goes into that line). Thread-safe.
  grpc::Status check_value(std::string_view value, const char* method, std::string_view peer);
  // check_value() of the "authorization" metadata, nullopt when the call
  // has none (a CallGate's check, proto/call_gate.h).
  grpc::Status check_header(std::optional<std::string_view> value, const char* method,
                            std::string_view peer);

 private:
  bool remember_nonce(const std::string& nonce, int64_t now_ms);

  const std::string secret_;
  const int64_t window_ms_;
  const Clock clock_;
  std::mutex mu_;
  std::unordered_map<std::string, int64_t> seen_;  // nonce -> when it may be forgotten
  int64_t next_prune_ms_ = 0;
};

}  // namespace hvd::proto
