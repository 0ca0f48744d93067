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

// kInvalidArgument naming the option when only some of the three are given;
// kNotFound naming the file when one cannot be read. Reading them (below):
// kInvalidArgument for a file that is not a regular file or not PEM, and for
// a --tls-key that others can read or another user owns (as for the agent
// secret, common/secret_file.h).
common::Status check_tls_files(const TlsFiles& files);

// Insecure credentials when !files.enabled().
common::Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& files);
common::Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const TlsFiles& files);

}  // namespace hvd::proto
