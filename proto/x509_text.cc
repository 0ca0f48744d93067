#include "proto/x509_text.h"

#include <openssl/bio.h>
#include <openssl/err.h>

#include <ctime>
#include <memory>

#include "common/printable.h"

namespace hvd::proto {

namespace {

constexpr size_t kMaxNameBytes = 200;

std::string name_text(const X509_NAME* name) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || name == nullptr ||
      X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) < 0) {
    return "unreadable name";
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  std::string text(data, size > 0 ? static_cast<size_t>(size) : 0);
  if (text.empty()) return "empty name";
  if (text.size() > kMaxNameBytes) text = text.substr(0, kMaxNameBytes) + "...";
  return common::printable(text);
}

}  // namespace

std::string subject_of(X509* cert) {
  return cert == nullptr ? "no certificate" : name_text(X509_get_subject_name(cert));
}

std::string issuer_of(X509* cert) {
  return cert == nullptr ? "no certificate" : name_text(X509_get_issuer_name(cert));
}

std::string time_text(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return "an unreadable time";
  char text[32];
  if (std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) {
    return "an unreadable time";
  }
  return text;
}

std::string openssl_error() {
  const unsigned long code = ERR_peek_error();
  if (code == 0) return "unknown reason";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "error " + std::to_string(code);
}

}  // namespace hvd::proto
