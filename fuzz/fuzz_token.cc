// The credentials of RPC calls, parsed from the `authorization` metadata:
// the job token of Rendezvous calls (proto/rpc_auth.h, check_token_value) and the
// HMAC proof of Agent calls (proto/agent_auth.h, AgentProofChecker).
// Byte 0 even: the rest is the metadata value, given to both checkers.
// Odd: bytes 1-2 are a time offset in seconds and bytes 3-18 a nonce, from
// which a real proof is made and checked (the proof parser's accepting
// side). Checks: only the exact token is accepted; a proof is accepted only
// once and only within the window; every refusal is UNAUTHENTICATED with a
// one-line printable message.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "proto/agent_auth.h"
#include "proto/rpc_auth.h"

using hvd::fuzz::one_line_printable;

namespace {

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";
constexpr char kSecret[] = "fuzz-agent-secret-Zq8t3vXw";
constexpr int64_t kNowMs = 1'800'000'000'000;
constexpr std::chrono::minutes kWindow{5};

void check_refusal(const grpc::Status& status) {
  FUZZ_CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED, status.error_message());
  FUZZ_CHECK(one_line_printable(status.error_message()), status.error_message());
}

void fuzz_value(std::string_view value) {
  auto status = hvd::proto::check_token_value(value, kToken, "Rendezvous.Set", "fuzz-peer");
  if (value == std::string("Bearer ") + kToken) {
    FUZZ_CHECK(status.ok(), status.error_message());
  } else {
    check_refusal(status);
  }

  hvd::proto::AgentProofChecker checker(kSecret, kWindow, [] { return kNowMs; });
  auto proof = checker.check_value(value, "Launch", "fuzz-peer");
  if (!proof.ok()) {
    check_refusal(proof);
    return;
  }
  // Only a seed made with the secret gets here: it must not pass twice.
  check_refusal(checker.check_value(value, "Launch", "fuzz-peer"));
}

void fuzz_proof(const uint8_t* data, size_t size) {
  if (size < 18) return;
  const int16_t offset_s = static_cast<int16_t>(data[0] | (data[1] << 8));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string nonce;
  for (size_t i = 2; i < 18; ++i) {
    nonce.push_back(kHex[data[i] >> 4]);
    nonce.push_back(kHex[data[i] & 0xf]);
  }
  const int64_t sent_ms = kNowMs + int64_t{offset_s} * 1000;
  const std::string value = hvd::proto::agent_proof(kSecret, "Launch", sent_ms, nonce);
  hvd::proto::AgentProofChecker checker(kSecret, kWindow, [] { return kNowMs; });
  auto first = checker.check_value(value, "Launch", "fuzz-peer");
  const bool in_window = std::abs(offset_s) * 1000 <= std::chrono::milliseconds(kWindow).count();
  FUZZ_CHECK(first.ok() == in_window, value + ": " + first.error_message());
  check_refusal(checker.check_value(value, "Launch", "fuzz-peer"));        // replayed
  check_refusal(checker.check_value(value, "Terminate", "fuzz-peer"));     // another method
  hvd::proto::AgentProofChecker other("another-secret-Zq8t3vXw", kWindow, [] { return kNowMs; });
  check_refusal(other.check_value(value, "Launch", "fuzz-peer"));          // another secret
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // refusals are logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    fuzz_value(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  } else {
    fuzz_proof(data + 1, size - 1);
  }
  return 0;
}
