#include "proto/agent_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdlib>

#include "common/token.h"
#include "proto/refusal_log.h"
#include "proto/rpc_auth.h"

namespace hvd::proto {

namespace {

// A refused call must not be able to grow the nonce cache without bound.
constexpr size_t kMaxRememberedNonces = 1 << 20;
constexpr size_t kNonceHexChars = 32;
constexpr size_t kMacHexChars = 64;

std::string to_hex(const unsigned char* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

bool is_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "t=..,n=..,m=.." -> its three fields; false when malformed.
bool parse_fields(std::string_view text, std::string_view* t, std::string_view* n,
                  std::string_view* m) {
  int found = 0;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view field = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (field.size() < 2 || field[1] != '=') return false;
    std::string_view value = field.substr(2);
    switch (field[0]) {
      case 't': *t = value; break;
      case 'n': *n = value; break;
      case 'm': *m = value; break;
      default: return false;
    }
    ++found;
  }
  return found == 3 && !t->empty() && !n->empty() && !m->empty();
}

grpc::Status refuse(const char* method, std::string_view peer, const char* why) {
  log_refusal(fmt::format("refused method={} peer={} reason=\"{}\"", method, peer, why));
  return {grpc::StatusCode::UNAUTHENTICATED, std::string(method) + " refused: " + why};
}

}  // namespace

std::string agent_proof(std::string_view secret, std::string_view method, int64_t now_ms,
                        std::string_view nonce_hex) {
  const std::string t = std::to_string(now_ms);
  std::string message = "hvd-agent-v1\n";
  message.append(method).append("\n").append(t).append("\n").append(nonce_hex);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return std::string(kAgentAuthScheme) + " t=" + t + ",n=" + std::string(nonce_hex) +
         ",m=" + to_hex(mac, mac_size);
}

void attach_agent_proof(grpc::ClientContext& context, std::string_view secret,
                        std::string_view method) {
  unsigned char nonce[kNonceHexChars / 2];
  if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
    // No randomness: send no credentials; the agent refuses the call.
    spdlog::error("cannot draw a random nonce for the {} call", method);
    return;
  }
  context.AddMetadata(kAuthMetadataKey,
                      agent_proof(secret, method, unix_ms(), to_hex(nonce, sizeof(nonce))));
}

AgentProofChecker::AgentProofChecker(std::string secret, std::chrono::milliseconds window,
                                     Clock clock)
    : secret_(std::move(secret)),
      window_ms_(window.count()),
      clock_(clock ? std::move(clock) : Clock(unix_ms)) {}

grpc::Status AgentProofChecker::check_header(std::optional<std::string_view> value,
                                             const char* method, std::string_view peer) {
  if (!value) return refuse(method, peer, "no credentials");
  return check_value(*value, method, peer);
}

grpc::Status AgentProofChecker::check_value(std::string_view value, const char* method,
                                            std::string_view peer) {
  if (secret_.empty()) return refuse(method, peer, "the agent has no secret configured");
  const std::string_view scheme = kAgentAuthScheme;
  if (value.size() > 512 || value.substr(0, scheme.size()) != scheme ||
      value.size() <= scheme.size() || value[scheme.size()] != ' ') {
    return refuse(method, peer, "malformed credentials");
  }
  std::string_view t, n, m;
  if (!parse_fields(value.substr(scheme.size() + 1), &t, &n, &m) ||
      n.size() != kNonceHexChars || m.size() != kMacHexChars || !is_hex(n) || !is_hex(m)) {
    return refuse(method, peer, "malformed credentials");
  }
  int64_t sent_ms = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), sent_ms);
  // A time before 2001 or after 2286 is no time a client sends (and keeps the
  // window arithmetic below far from overflow).
  if (ec != std::errc() || end != t.data() + t.size() || sent_ms < 1'000'000'000'000 ||
      sent_ms > 9'999'999'999'999) {
    return refuse(method, peer, "malformed credentials");
  }
  const std::string expected = agent_proof(secret_, method, sent_ms, n);
  if (!common::tokens_equal(value, expected)) return refuse(method, peer, "wrong credentials");
  const int64_t now = clock_();
  if (now - sent_ms > window_ms_ || sent_ms - now > window_ms_) {
    return refuse(method, peer,
                  "credentials outside the time window (are the hosts' clocks in sync?)");
  }
  if (!remember_nonce(std::string(n), now)) return refuse(method, peer, "replayed credentials");
  return grpc::Status::OK;
}

bool AgentProofChecker::remember_nonce(const std::string& nonce, int64_t now_ms) {
  std::lock_guard lock(mu_);
  if (now_ms >= next_prune_ms_ || seen_.size() >= kMaxRememberedNonces) {
    for (auto it = seen_.begin(); it != seen_.end();) {
      it = it->second <= now_ms ? seen_.erase(it) : std::next(it);
    }
    next_prune_ms_ = now_ms + 10'000;
    if (seen_.size() >= kMaxRememberedNonces) return false;  // refuse rather than forget
  }
  // A proof is valid until sent + window; remembering it until now + 2*window covers that.
  return seen_.emplace(nonce, now_ms + 2 * window_ms_).second;
}

}  // namespace hvd::proto
