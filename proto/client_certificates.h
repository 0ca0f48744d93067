// The agent's check of its TLS clients' certificates (mutual TLS,
// tls_credentials.h). gRPC's own check inside the handshake refuses a client
// with one raw line for every reason ("certificate verify failed": an
// unknown CA and an expired certificate read the same). The agent therefore
// asks gRPC to request a certificate without verifying it and verifies it
// here, with OpenSSL's X509_verify_cert against --tls-ca as OpenSSL does
// inside a handshake (the "ssl_client" purpose, security level 2, every
// certificate of --tls-ca a trust anchor as gRPC has it): a refused
// client is refused all the same (the handshake fails, no call is seen) and
// the refusal is logged with its reason and the client's certificate:
//
//   refused TLS handshake from tls:CN=rogue: unknown CA (its certificate,
//   issued by CN=other-ca, is not signed by a CA of --tls-ca)
//
// gRPC (1.51) does not tell a certificate verifier the peer's address, so
// the line cannot name it. Each kind of reason is logged at most once per
// 10 s (with the number not shown, as proto/refusal_log.h).
#pragma once

#include <grpcpp/security/tls_certificate_verifier.h>

#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::proto {

class ClientCertificateCheck {
 public:
  // `ca_pem`: --tls-ca, certificates that client certificates must chain
  // to. kInvalidArgument when it holds none that parses.
  static common::Result<std::shared_ptr<const ClientCertificateCheck>> create(
      const std::string& ca_pem);
  ~ClientCertificateCheck();

  enum class Kind { kAccepted, kNoCertificate, kUnknownCa, kExpired, kNotYetValid, kNotForClients,
                    kOther };
  struct Verdict {
    Kind kind = Kind::kAccepted;
    std::string peer;    // "tls:CN=client", or "a client without a certificate"
    std::string reason;  // why it is refused; empty when accepted
  };

  // The verdict on a client that presented `leaf_pem` (empty: none) and
  // `chain_pem` (the certificates it sent, the leaf included or not; may be
  // empty), at `now`.
  Verdict check(std::string_view leaf_pem, std::string_view chain_pem,
                std::time_t now = std::time(nullptr)) const;

 private:
  struct Store;
  explicit ClientCertificateCheck(std::unique_ptr<Store> store);
  std::unique_ptr<Store> store_;
};

// A gRPC certificate verifier running `check` on every TLS client; a
// refusal is logged (warning) and fails the handshake.
std::shared_ptr<grpc::experimental::CertificateVerifier> client_certificate_verifier(
    std::shared_ptr<const ClientCertificateCheck> check);

}  // namespace hvd::proto
