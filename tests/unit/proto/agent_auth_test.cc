#include "proto/agent_auth.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <regex>
#include <string>

using namespace std::chrono_literals;
using hvd::proto::agent_proof;
using hvd::proto::AgentProofChecker;

namespace {

constexpr char kSecret[] = "a-secret-of-sufficient-length";
constexpr char kPeer[] = "ipv4:192.0.2.7:4242";
constexpr int64_t kNow = 1'800'000'000'000;  // unix ms, the checker's clock
const std::string kNonce = "00112233445566778899aabbccddeeff";

// A checker whose clock stands still at `now` (a 5 minute window).
AgentProofChecker checker_at(int64_t now, std::string secret = kSecret) {
  return AgentProofChecker(std::move(secret), 5min, [now] { return now; });
}

std::string nonce(int i) {
  std::string n = kNonce;
  n[0] = "0123456789abcdef"[i % 16];
  n[1] = "0123456789abcdef"[(i / 16) % 16];
  return n;
}

// Refused with UNAUTHENTICATED and `reason` in the message, which never
// holds the secret or the mac.
void check_refused(const grpc::Status& status, const std::string& reason,
                   const std::string& proof = "") {
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_THAT(status.error_message(), Catch::Contains(reason));
  CHECK_THAT(status.error_message(), !Catch::Contains(kSecret));
  if (proof.size() > 64)
    CHECK_THAT(status.error_message(), !Catch::Contains(proof.substr(proof.size() - 64)));
}

}  // namespace

TEST_CASE("agent_proof has the documented format") {
  const std::string proof = agent_proof(kSecret, "Agent.Info", kNow, kNonce);
  CHECK(std::regex_match(
      proof, std::regex("HVD-HMAC-SHA256 t=1800000000000,n=" + kNonce + ",m=[0-9a-f]{64}")));
  // Deterministic, and bound to every input.
  CHECK(proof == agent_proof(kSecret, "Agent.Info", kNow, kNonce));
  CHECK(proof != agent_proof("another-secret-of-length", "Agent.Info", kNow, kNonce));
  CHECK(proof != agent_proof(kSecret, "Agent.Launch", kNow, kNonce));
  CHECK(proof != agent_proof(kSecret, "Agent.Info", kNow + 1, kNonce));
  CHECK(proof != agent_proof(kSecret, "Agent.Info", kNow, nonce(1)));
}

TEST_CASE("A valid proof is accepted once; its replay is refused") {
  auto checker = checker_at(kNow);
  const std::string proof = agent_proof(kSecret, "Agent.Launch", kNow - 1000, kNonce);
  CHECK(checker.check_value(proof, "Agent.Launch", kPeer).ok());
  check_refused(checker.check_value(proof, "Agent.Launch", kPeer), "replayed", proof);
  // A fresh nonce is fine again.
  CHECK(
      checker
          .check_value(agent_proof(kSecret, "Agent.Launch", kNow, nonce(2)), "Agent.Launch", kPeer)
          .ok());
}

TEST_CASE("A proof of another secret is refused") {
  auto checker = checker_at(kNow);
  const std::string proof = agent_proof("not-the-agent-secret-at-all", "Agent.Info", kNow, kNonce);
  check_refused(checker.check_value(proof, "Agent.Info", kPeer), "wrong credentials", proof);
  // The refused proof did not use up its nonce: the right one still passes.
  CHECK(checker.check_value(agent_proof(kSecret, "Agent.Info", kNow, kNonce), "Agent.Info", kPeer)
            .ok());
}

TEST_CASE("A proof for one method is refused for another") {
  auto checker = checker_at(kNow);
  const std::string proof = agent_proof(kSecret, "Agent.Info", kNow, kNonce);
  check_refused(checker.check_value(proof, "Agent.Launch", kPeer), "wrong credentials", proof);
  check_refused(checker.check_value(proof, "Agent.Terminate", kPeer), "wrong credentials", proof);
}

TEST_CASE("Malformed proofs are refused, each for being malformed") {
  auto checker = checker_at(kNow);
  const std::string good = agent_proof(kSecret, "Agent.Info", kNow, kNonce);
  const std::string mac = good.substr(good.size() - 64);
  const std::string t = std::to_string(kNow);
  const std::vector<std::string> malformed = {
      "",
      "Bearer " + std::string(kSecret),                         // the old scheme
      "HVD-HMAC-SHA256",                                        // no fields
      "HVD-HMAC-SHA256t=" + t + ",n=" + kNonce + ",m=" + mac,   // no blank after the scheme
      "hvd-hmac-sha256 t=" + t + ",n=" + kNonce + ",m=" + mac,  // scheme in the wrong case
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce,                // no mac
      "HVD-HMAC-SHA256 n=" + kNonce + ",m=" + mac,              // no time
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce + ",m=" + mac + ",x=1",       // an extra field
      "HVD-HMAC-SHA256 t=,n=" + kNonce + ",m=" + mac,                         // empty time
      "HVD-HMAC-SHA256 t=12a,n=" + kNonce + ",m=" + mac,                      // time not a number
      "HVD-HMAC-SHA256 t=" + t + " ,n=" + kNonce + ",m=" + mac,               // junk after the time
      "HVD-HMAC-SHA256 t=99999999999999999999,n=" + kNonce + ",m=" + mac,     // time overflows
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce.substr(2) + ",m=" + mac,      // short nonce
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce + "00,m=" + mac,              // long nonce
      "HVD-HMAC-SHA256 t=" + t + ",n=" + std::string(32, 'g') + ",m=" + mac,  // nonce not hex
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce + ",m=" + mac.substr(1),      // short mac
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce + ",m=" + std::string(64, 'A'),  // upper case
      "HVD-HMAC-SHA256 t=" + t + ",n=" + kNonce + ",m=" + mac + std::string(600, '0'),  // huge
      "HVD-HMAC-SHA256 t" + t + ",n=" + kNonce + ",m=" + mac,                           // no '='
  };
  for (const auto& value : malformed) {
    INFO(value);
    check_refused(checker.check_value(value, "Agent.Info", kPeer), "malformed credentials");
  }
  // A trailing comma is not worth a parse error of its own: the whole value
  // no longer matches the expected proof.
  check_refused(checker.check_value(good + ",", "Agent.Info", kPeer), "credentials");
  // None of them used up anything: the good proof still passes.
  CHECK(checker.check_value(good, "Agent.Info", kPeer).ok());
}

TEST_CASE("A proof whose time is outside the window is refused") {
  const int64_t window_ms = 5 * 60 * 1000;
  auto checker = checker_at(kNow);
  // At the edges of the window it is still fresh.
  CHECK(checker
            .check_value(agent_proof(kSecret, "Agent.Info", kNow - window_ms, nonce(1)),
                         "Agent.Info", kPeer)
            .ok());
  CHECK(checker
            .check_value(agent_proof(kSecret, "Agent.Info", kNow + window_ms, nonce(2)),
                         "Agent.Info", kPeer)
            .ok());
  // One millisecond beyond, either way, it is not.
  check_refused(
      checker.check_value(agent_proof(kSecret, "Agent.Info", kNow - window_ms - 1, nonce(3)),
                          "Agent.Info", kPeer),
      "time window");
  check_refused(
      checker.check_value(agent_proof(kSecret, "Agent.Info", kNow + window_ms + 1, nonce(4)),
                          "Agent.Info", kPeer),
      "time window");
}

TEST_CASE("A recorded proof cannot be replayed once its nonce is forgotten") {
  // The clock moves: the nonce is forgotten after the window, but by then
  // the proof's time is outside the window.
  std::atomic<int64_t> now{kNow};
  AgentProofChecker checker(kSecret, 1s, [&] { return now.load(); });
  const std::string proof = agent_proof(kSecret, "Agent.Signal", kNow, kNonce);
  CHECK(checker.check_value(proof, "Agent.Signal", kPeer).ok());
  for (int64_t step : {500, 1000, 3000, 60000}) {
    now = kNow + step;
    INFO("after " << step << " ms");
    CHECK_FALSE(checker.check_value(proof, "Agent.Signal", kPeer).ok());
  }
}

TEST_CASE("A checker without a secret refuses everything") {
  auto checker = checker_at(kNow, "");
  check_refused(
      checker.check_value(agent_proof("", "Agent.Info", kNow, kNonce), "Agent.Info", kPeer),
      "no secret");
  check_refused(
      checker.check_value(agent_proof(kSecret, "Agent.Info", kNow, kNonce), "Agent.Info", kPeer),
      "no secret");
  check_refused(checker.check_value("", "Agent.Info", kPeer), "no secret");
}
