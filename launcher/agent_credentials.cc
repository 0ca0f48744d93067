#include "launcher/agent_credentials.h"

#include "common/secret_file.h"
#include "proto/tls_credentials.h"

namespace hvd::launcher {

common::Result<RemoteCredentials> remote_credentials(const LaunchOptions& options,
                                                     const std::string& remote_host) {
  auto channel = proto::channel_credentials(options.tls);
  if (!channel.is_ok()) return common::invalid_argument(channel.status().message());
  return remote_credentials(options, remote_host, std::move(channel).value());
}

common::Result<RemoteCredentials> remote_credentials(
    const LaunchOptions& options, const std::string& remote_host,
    std::shared_ptr<grpc::ChannelCredentials> channel) {
  if (options.secret_file.empty()) {
    return common::invalid_argument(
        "host '" + remote_host +
        "' is remote: its hvd-agent needs the shared secret, give --secret-file FILE "
        "(or set HVD_SECRET_FILE)");
  }
  auto secret = common::read_secret_file(options.secret_file);
  if (!secret.is_ok()) {
    return common::invalid_argument(secret.status().message());
  }
  return RemoteCredentials{std::move(secret).value(), std::move(channel)};
}

}  // namespace hvd::launcher
