// X.509 certificates and OpenSSL errors as text for one-line messages and
// log lines (tls_files.cc, client_certificates.cc). Everything that comes
// from a certificate is escaped (common/printable.h) and bounded: a peer's
// certificate is untrusted input.
#pragma once

#include <openssl/asn1.h>
#include <openssl/x509.h>

#include <string>

namespace hvd::proto {

// The subject as RFC 2253 text ("CN=agent1,O=lab"), at most 200 bytes.
std::string subject_of(X509* cert);
// The same of the issuer.
std::string issuer_of(X509* cert);

// "2026-11-28 02:24:38 UTC".
std::string time_text(const ASN1_TIME* time);

// The reason of the oldest error in OpenSSL's queue of this thread
// ("unsupported", "bad base64 decode"), or "unknown reason".
std::string openssl_error();

}  // namespace hvd::proto
