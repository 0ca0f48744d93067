// TLS for the Agent service: PEM files -> gRPC credentials. Agents present a
// certificate and require one from every client, signed by the CA given
// (mutual TLS); clients (hvdrun) present theirs and verify the agent's
// against the same CA. Without TLS options everything is plaintext (the
// HMAC proofs of agent_auth.h still authenticate every call).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace hvd::proto {

struct TlsFiles {
  std::string cert;  // PEM certificate chain of this side
  std::string key;   // PEM private key of `cert`
  std::string ca;    // PEM CA bundle that the other side's certificate must chain to

  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// kInvalidArgument naming the option when only some of the three are given.
common::Status check_tls_files(const TlsFiles& files);

// Insecure credentials when !files.enabled(). The files are read and checked
// as a set first (tls_files.h: kNotFound naming a file that cannot be read;
// kInvalidArgument for a file that is not a regular file or not PEM, a
// --tls-key that others can read or another user owns, a file that holds the
// wrong kind of thing, a key that does not match the certificate, an expired
// certificate). The server verifies its clients' certificates itself, to log
// why it refuses one (client_certificates.h).
common::Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& files);
common::Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const TlsFiles& files);

}  // namespace hvd::proto
