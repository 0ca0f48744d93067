#include "runtime/discovery/job_token.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace hvd::runtime {

std::string derive_job_token(std::string_view material) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(material.data(), material.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 is not available from OpenSSL");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token = "derived-";
  for (unsigned int i = 0; i < length; ++i) {
    token.push_back(kHex[digest[i] >> 4]);
    token.push_back(kHex[digest[i] & 0xf]);
  }
  return token;
}

}  // namespace hvd::runtime
