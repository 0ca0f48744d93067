// Agent secrets (common/secret_file.h): check_secret on the file's contents
// (read_secret_file reads the file, then calls it). Checks: an accepted
// secret is the input less its trailing blanks, with at least
// kMinSecretBytes bytes that are not blank and kMinSecretDistinctBytes
// different bytes; a refusal names where the secret came from, never its
// contents, and is one printable line.
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/secret_file.h"
#include "fuzz_check.h"

using hvd::fuzz::one_line_printable;

namespace {

constexpr char kHowTo[] = "; a secret needs at least N (e.g. head -c N /dev/urandom | baseN > FILE)";
const std::string kWeak = std::string(" holds N bytes that are not blank") + kHowTo;
const std::string kWeakOne = std::string(" holds N byte that is not blank") + kHowTo;
const std::string kFewBytes = std::string(" uses N different byte values") + kHowTo;

// `text` with every run of digits replaced by one N.
std::string without_numbers(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] >= '0' && text[i] <= '9') {
      if (out.empty() || out.back() != 'N') out.push_back('N');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string where = "secret file '/etc/hvd/secret'";
  auto secret = hvd::common::check_secret(text, where);
  if (!secret.is_ok()) {
    const std::string& message = secret.status().message();
    FUZZ_CHECK(one_line_printable(message), message);
    FUZZ_CHECK(message.rfind(where, 0) == 0, "refusal without where: " + message);
    // Never the contents: with its numbers written N, the refusal is one of
    // three fixed texts.
    const std::string shape = without_numbers(message.substr(where.size()));
    FUZZ_CHECK(shape == kWeak || shape == kWeakOne || shape == kFewBytes,
               "a refusal that may quote the secret: " + message);
    return 0;
  }
  const std::string& s = *secret;
  FUZZ_CHECK(text.compare(0, s.size(), s) == 0, "the secret is not a prefix of the file");
  for (size_t i = s.size(); i < text.size(); ++i) {
    const char c = text[i];
    FUZZ_CHECK(c == ' ' || c == '\t' || c == '\n' || c == '\r', "dropped a byte that is not trailing blank");
  }
  FUZZ_CHECK(s.empty() || !(s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'),
             "trailing blank kept");
  size_t solid = 0;
  std::bitset<256> seen;
  for (char c : s) {
    if (!is_blank(c)) ++solid;
    seen.set(static_cast<unsigned char>(c));
  }
  FUZZ_CHECK(solid >= hvd::common::kMinSecretBytes, "a weak secret is accepted");
  FUZZ_CHECK(seen.count() >= hvd::common::kMinSecretDistinctBytes, "a weak secret is accepted");
  return 0;
}
