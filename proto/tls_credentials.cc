#include "proto/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "proto/client_certificates.h"
#include "proto/tls_files.h"

namespace hvd::proto {

common::Status check_tls_files(const TlsFiles& files) {
  if (!files.enabled()) return common::Status::ok();
  if (files.cert.empty()) return common::invalid_argument("TLS needs --tls-cert as well");
  if (files.key.empty()) return common::invalid_argument("TLS needs --tls-key as well");
  if (files.ca.empty()) return common::invalid_argument("TLS needs --tls-ca as well");
  return common::Status::ok();
}

common::Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  auto pems = read_tls_files(files);
  if (!pems.is_ok()) return pems.status();
  auto check = ClientCertificateCheck::create(pems->ca);
  if (!check.is_ok()) return check.status();
  namespace tls = grpc::experimental;
  auto provider = std::make_shared<tls::StaticDataCertificateProvider>(
      pems->ca, std::vector<tls::IdentityKeyCertPair>{{pems->key, pems->cert}});
  tls::TlsServerCredentialsOptions options(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // A client certificate is required all the same: the verifier refuses a
  // client without one, or with one that does not verify against --tls-ca,
  // and logs why (client_certificates.h); gRPC's own check would refuse it
  // with one raw line whatever the reason.
  options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  options.set_certificate_verifier(client_certificate_verifier(std::move(check).value()));
  return grpc::experimental::TlsServerCredentials(options);
}

common::Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  auto pems = read_tls_files(files);
  if (!pems.is_ok()) return pems.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pems->ca;
  options.pem_private_key = pems->key;
  options.pem_cert_chain = pems->cert;
  return grpc::SslCredentials(options);
}

}  // namespace hvd::proto
