#include "proto/tls_credentials.h"

#include "common/input_file.h"
#include "common/printable.h"

namespace hvd::proto {

namespace {

// A PEM file of `option`: a regular file (never a FIFO to wait on) of at
// most 1 MiB; the private key (`private_key`) also of mode 0600/0400 and
// owned by this user or root, like the agent secret (common/input_file.h).
common::Result<std::string> read_pem(const std::string& option, const std::string& path,
                                     bool private_key = false) {
  common::InputRules rules;
  rules.what = option + " file";
  rules.private_file = private_key;
  auto pem = common::read_input_file(path, rules);
  if (!pem.is_ok()) return pem.status();
  if (pem->find("-----BEGIN ") == std::string::npos) {
    return common::invalid_argument(option + " file '" + common::printable(path) + "' is not PEM");
  }
  return pem;
}

struct Pems {
  std::string cert, key, ca;
};

common::Result<Pems> read_all(const TlsFiles& files) {
  HVD_RETURN_IF_ERROR(check_tls_files(files));
  auto cert = read_pem("--tls-cert", files.cert);
  if (!cert.is_ok()) return cert.status();
  auto key = read_pem("--tls-key", files.key, /*private_key=*/true);
  if (!key.is_ok()) return key.status();
  auto ca = read_pem("--tls-ca", files.ca);
  if (!ca.is_ok()) return ca.status();
  return Pems{*cert, *key, *ca};
}

}  // namespace

common::Status check_tls_files(const TlsFiles& files) {
  if (!files.enabled()) return common::Status::ok();
  if (files.cert.empty()) return common::invalid_argument("TLS needs --tls-cert as well");
  if (files.key.empty()) return common::invalid_argument("TLS needs --tls-key as well");
  if (files.ca.empty()) return common::invalid_argument("TLS needs --tls-ca as well");
  return common::Status::ok();
}

common::Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  auto pems = read_all(files);
  if (!pems.is_ok()) return pems.status();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = pems->ca;
  options.pem_key_cert_pairs.push_back({pems->key, pems->cert});
  return grpc::SslServerCredentials(options);
}

common::Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  auto pems = read_all(files);
  if (!pems.is_ok()) return pems.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pems->ca;
  options.pem_private_key = pems->key;
  options.pem_cert_chain = pems->cert;
  return grpc::SslCredentials(options);
}

}  // namespace hvd::proto
