// What hvdrun needs to call the hvd-agent of a remote host: the shared
// secret (--secret-file, else HVD_SECRET_FILE; common/secret_file.h checks
// its mode) and the channel credentials (TLS with --tls-*, else plaintext;
// every call carries an HMAC proof of the secret either way).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/cli.h"

namespace hvd::launcher {

struct RemoteCredentials {
  std::string secret;  // never logged
  std::shared_ptr<grpc::ChannelCredentials> channel;
};

// Reads the secret and TLS files for a job whose first remote host is
// `remote_host`. kInvalidArgument, one line naming the host and the option,
// when no secret file is given; the reader's error (naming the file) when it
// cannot be used. Every error is a usage error (exit 2).
common::Result<RemoteCredentials> remote_credentials(const LaunchOptions& options,
                                                     const std::string& remote_host);
// The same with the channel credentials read already (hvdrun reads the TLS
// files first of all).
common::Result<RemoteCredentials> remote_credentials(
    const LaunchOptions& options, const std::string& remote_host,
    std::shared_ptr<grpc::ChannelCredentials> channel);

}  // namespace hvd::launcher
