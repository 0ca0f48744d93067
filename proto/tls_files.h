// The three TLS files (--tls-cert, --tls-key, --tls-ca) read and checked as
// a set with OpenSSL before gRPC sees them (issue 29: gRPC took a key of
// another certificate, or a key given as --tls-cert, without a word, and
// failed every connection later with raw "Invalid private key" lines).
// Every error is one line naming the option, the file and what is wrong;
// never the contents.
#pragma once

#include <ctime>
#include <string>

#include "common/status.h"
#include "proto/tls_credentials.h"

namespace hvd::proto {

struct TlsPems {
  std::string cert, key, ca;  // PEM text of --tls-cert, --tls-key, --tls-ca
};

// Reads the files (common/input_file.h: regular files only, not on a kernel
// pseudo filesystem; the key private like a secret) and checks, at `now`:
//  - --tls-cert holds certificates that parse (not a key, a request, ...);
//    the first one, this side's own, is valid now (not expired, not before
//    its start);
//  - --tls-key holds a private key that is not encrypted (gRPC cannot ask
//    for a passphrase), not a certificate, and that matches the first
//    certificate of --tls-cert;
//  - --tls-ca holds certificates that parse.
// kInvalidArgument for any of these (kNotFound for a file that cannot be
// opened), e.g. "--tls-key file 'a.key' does not match the certificate of
// --tls-cert file 'b.pem' (CN=agent1)".
common::Result<TlsPems> read_tls_files(const TlsFiles& files, std::time_t now = std::time(nullptr));

}  // namespace hvd::proto
