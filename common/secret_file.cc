#include "common/secret_file.h"

#include <bitset>
#include <utility>

#include "common/input_file.h"
#include "common/printable.h"

namespace hvd::common {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0';
}

constexpr char kHowTo[] = " (e.g. head -c 32 /dev/urandom | base64 > FILE)";

}  // namespace

Result<std::string> read_secret_file(const std::string& path) {
  InputRules rules;
  rules.what = "secret file";
  rules.max_bytes = kMaxSecretBytes;
  rules.private_file = true;
  auto text = read_input_file(path, rules);
  if (!text.is_ok()) return text.status();
  return check_secret(std::move(text).value(), "secret file '" + printable(path) + "'");
}

Result<std::string> check_secret(std::string secret, const std::string& where) {
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t')) {
    secret.pop_back();
  }
  size_t solid = 0;
  std::bitset<256> seen;
  for (char c : secret) {
    if (!is_blank(c)) ++solid;
    seen.set(static_cast<unsigned char>(c));
  }
  if (solid < kMinSecretBytes) {
    return invalid_argument(where + " holds " + std::to_string(solid) +
                            (solid == 1 ? " byte that is" : " bytes that are") +
                            " not blank; a secret needs at least " +
                            std::to_string(kMinSecretBytes) + kHowTo);
  }
  if (seen.count() < kMinSecretDistinctBytes) {
    return invalid_argument(where + " uses " + std::to_string(seen.count()) +
                            " different byte values; a secret needs at least " +
                            std::to_string(kMinSecretDistinctBytes) + kHowTo);
  }
  return secret;
}

}  // namespace hvd::common
