#include "proto/tls_files.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <vector>

#include "common/input_file.h"
#include "common/printable.h"
#include "proto/x509_text.h"

namespace hvd::proto {

namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// Clears OpenSSL's error queue of this thread when it goes out of scope:
// gRPC reads the same queue for its own errors later.
struct ClearOpenSslErrors {
  ~ClearOpenSslErrors() { ERR_clear_error(); }
};

// One "-----BEGIN <label>----- ... -----END <label>-----" block.
struct PemBlock {
  std::string label;
  std::string text;  // the whole block, BEGIN and END lines included
};

bool is_certificate(const std::string& label) {
  return label == "CERTIFICATE" || label == "X509 CERTIFICATE" || label == "TRUSTED CERTIFICATE";
}

bool is_private_key(const std::string& label) {
  return label.size() >= 11 && label.compare(label.size() - 11, 11, "PRIVATE KEY") == 0;
}

// "a private key", "a certificate request", "a PUBLIC KEY block".
std::string kind_of(const std::string& label) {
  if (is_private_key(label)) return "a private key";
  if (is_certificate(label)) return "a certificate";
  if (label == "CERTIFICATE REQUEST" || label == "NEW CERTIFICATE REQUEST") {
    return "a certificate request (CSR)";
  }
  if (label == "PUBLIC KEY" || label == "RSA PUBLIC KEY") return "a public key";
  if (label == "X509 CRL") return "a certificate revocation list";
  return "a " + common::printable(label.substr(0, 40)) + " block";
}

// The PEM blocks of `pem`, in order; `where` names the file in errors.
common::Result<std::vector<PemBlock>> pem_blocks(const std::string& pem, const std::string& where) {
  std::vector<PemBlock> blocks;
  constexpr std::string_view kBegin = "-----BEGIN ";
  size_t at = 0;
  while ((at = pem.find(kBegin, at)) != std::string::npos) {
    const size_t label_at = at + kBegin.size();
    const size_t label_end = pem.find("-----", label_at);
    const size_t line_end = pem.find('\n', label_at);
    if (label_end == std::string::npos || (line_end != std::string::npos && label_end > line_end)) {
      return common::invalid_argument(where + " has a malformed PEM BEGIN line");
    }
    PemBlock block;
    block.label = pem.substr(label_at, label_end - label_at);
    const std::string end_line = "-----END " + block.label + "-----";
    const size_t end = pem.find(end_line, label_end);
    if (end == std::string::npos) {
      return common::invalid_argument(where + " has a PEM block 'BEGIN " +
                                      common::printable(block.label.substr(0, 40)) +
                                      "' without its END line (a truncated file?)");
    }
    block.text = pem.substr(at, end + end_line.size() - at);
    blocks.push_back(std::move(block));
    at = end + end_line.size();
  }
  return blocks;
}

// The certificates of `blocks` (other blocks skipped); `where` names the
// file. Every certificate block must parse.
common::Result<std::vector<X509Ptr>> certificates_of(const std::vector<PemBlock>& blocks,
                                                     const std::string& where) {
  std::vector<X509Ptr> certs;
  for (const PemBlock& block : blocks) {
    if (!is_certificate(block.label)) continue;
    ClearOpenSslErrors clear;
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(block.text.data(), static_cast<int>(block.text.size())), &BIO_free);
    X509Ptr cert(bio ? PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr) : nullptr,
                 &X509_free);
    if (!cert) {
      return common::invalid_argument(where + ": certificate " + std::to_string(certs.size() + 1) +
                                      " cannot be parsed (" + openssl_error() + ")");
    }
    certs.push_back(std::move(cert));
  }
  return certs;
}

// What a file that should hold certificates holds instead, for the message.
std::string holds_instead(const std::vector<PemBlock>& blocks) {
  return blocks.empty() ? "no PEM block" : kind_of(blocks.front().label);
}

// The certificates of --tls-cert or --tls-ca (at least one).
common::Result<std::vector<X509Ptr>> read_certificates(const std::string& where,
                                                       const std::string& pem) {
  auto blocks = pem_blocks(pem, where);
  if (!blocks.is_ok()) return blocks.status();
  auto certs = certificates_of(*blocks, where);
  if (!certs.is_ok()) return certs.status();
  if (certs->empty()) {
    return common::invalid_argument(where + " holds " + holds_instead(*blocks) +
                                    ", not a certificate");
  }
  return certs;
}

// Refuses to prompt for a passphrase (OpenSSL's default reads the terminal).
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

common::Result<KeyPtr> read_private_key(const std::string& where, const std::string& pem) {
  auto blocks = pem_blocks(pem, where);
  if (!blocks.is_ok()) return blocks.status();
  const PemBlock* key_block = nullptr;
  for (const PemBlock& block : *blocks) {
    if (is_private_key(block.label)) {
      key_block = &block;
      break;
    }
  }
  if (key_block == nullptr) {
    return common::invalid_argument(where + " holds " + holds_instead(*blocks) +
                                    ", not a private key");
  }
  if (key_block->label == "ENCRYPTED PRIVATE KEY" ||
      key_block->text.find("Proc-Type: 4,ENCRYPTED") != std::string::npos) {
    return common::invalid_argument(
        where + " holds an encrypted private key: TLS needs it without a passphrase "
                "(openssl pkey -in KEY -out KEY.plain, then chmod 600)");
  }
  ClearOpenSslErrors clear;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(key_block->text.data(), static_cast<int>(key_block->text.size())),
      &BIO_free);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, &no_passphrase, nullptr) : nullptr,
             &EVP_PKEY_free);
  if (!key) {
    return common::invalid_argument(where + ": its private key cannot be parsed (" +
                                    openssl_error() + ")");
  }
  return key;
}

// This side's own certificate must be valid now: the other side refuses it
// otherwise, at every connection.
common::Status check_validity(const std::string& where, X509* cert, std::time_t now) {
  const std::string who = " (" + subject_of(cert) + ")";
  if (X509_cmp_time(X509_get0_notAfter(cert), &now) < 0) {
    return common::invalid_argument(where + ": its certificate" + who + " expired on " +
                                    time_text(X509_get0_notAfter(cert)));
  }
  if (X509_cmp_time(X509_get0_notBefore(cert), &now) > 0) {
    return common::invalid_argument(where + ": its certificate" + who + " is not valid before " +
                                    time_text(X509_get0_notBefore(cert)) +
                                    " (is this host's clock right?)");
  }
  return common::Status::ok();
}

// A PEM file of `option`: a regular file (never a FIFO to wait on) of at
// most 1 MiB, not on a kernel pseudo filesystem; the private key
// (`private_key`) also of mode 0600/0400 and owned by this user or root,
// like the agent secret (common/input_file.h).
common::Result<std::string> read_pem(const std::string& option, const std::string& path,
                                     bool private_key = false) {
  common::InputRules rules;
  rules.what = option + " file";
  rules.private_file = private_key;
  rules.real_file = true;
  auto pem = common::read_input_file(path, rules);
  if (!pem.is_ok()) return pem.status();
  if (pem->find("-----BEGIN ") == std::string::npos) {
    return common::invalid_argument(option + " file '" + common::printable(path) + "' is not PEM");
  }
  return pem;
}

std::string where(const std::string& option, const std::string& path) {
  return option + " file '" + common::printable(path) + "'";
}

}  // namespace

common::Result<TlsPems> read_tls_files(const TlsFiles& files, std::time_t now) {
  HVD_RETURN_IF_ERROR(check_tls_files(files));
  TlsPems pems;
  auto cert = read_pem("--tls-cert", files.cert);
  if (!cert.is_ok()) return cert.status();
  pems.cert = std::move(cert).value();
  auto key = read_pem("--tls-key", files.key, /*private_key=*/true);
  if (!key.is_ok()) return key.status();
  pems.key = std::move(key).value();
  auto ca = read_pem("--tls-ca", files.ca);
  if (!ca.is_ok()) return ca.status();
  pems.ca = std::move(ca).value();

  const std::string cert_file = where("--tls-cert", files.cert);
  const std::string key_file = where("--tls-key", files.key);
  auto chain = read_certificates(cert_file, pems.cert);
  if (!chain.is_ok()) return chain.status();
  auto private_key = read_private_key(key_file, pems.key);
  if (!private_key.is_ok()) return private_key.status();
  auto roots = read_certificates(where("--tls-ca", files.ca), pems.ca);
  if (!roots.is_ok()) return roots.status();

  X509* own = chain->front().get();
  {
    ClearOpenSslErrors clear;
    if (X509_check_private_key(own, private_key->get()) != 1) {
      return common::invalid_argument(key_file + " does not match the certificate of " +
                                      cert_file + " (" + subject_of(own) +
                                      "): give the key that certificate was made for");
    }
  }
  HVD_RETURN_IF_ERROR(check_validity(cert_file, own, now));
  return pems;
}

}  // namespace hvd::proto
