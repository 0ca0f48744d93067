#include "daemon/rendezvous/worker_credentials.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <span>

#include "common/token.h"

namespace hvd::daemon {

namespace {

constexpr std::string_view kPrefix = "slot-";
constexpr size_t kMacHexChars = 64;
// Ids of at most 10 digits (an int).
constexpr size_t kMaxIdDigits = 10;

}  // namespace

std::string worker_credential(std::string_view job_token, int id) {
  const std::string number = std::to_string(id);
  const std::string message = "hvd-rendezvous-slot-v1\n" + number;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), job_token.data(), static_cast<int>(job_token.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return std::string(kPrefix) + number + "." + common::to_hex(std::span(mac, mac_size));
}

JobCredentials::JobCredentials(std::string job_token) : token_(std::move(job_token)) {}

std::optional<Caller> JobCredentials::caller(std::string_view credential) const {
  if (credential.empty()) return std::nullopt;
  if (common::tokens_equal(credential, token_)) return Caller{};
  if (credential.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view rest = credential.substr(kPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > kMaxIdDigits ||
      rest.size() - dot - 1 != kMacHexChars) {
    return std::nullopt;
  }
  int id = -1;
  const char* first = rest.data();
  const char* last = rest.data() + dot;
  auto [end, error] = std::from_chars(first, last, id);
  // Canonical numbers only ("7", not "07" or "+7"): the mac covers the text.
  if (error != std::errc() || end != last || id < 0 || (dot > 1 && rest[0] == '0')) {
    return std::nullopt;
  }
  {
    std::lock_guard lock(mu_);
    if (auto it = known_.find(id); it != known_.end()) {
      if (common::tokens_equal(credential, it->second)) return Caller{id};
      return std::nullopt;
    }
  }
  std::string expected = worker_credential(token_, id);
  if (!common::tokens_equal(credential, expected)) return std::nullopt;
  std::lock_guard lock(mu_);
  known_.emplace(id, std::move(expected));
  return Caller{id};
}

}  // namespace hvd::daemon
