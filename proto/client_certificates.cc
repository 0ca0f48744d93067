#include "proto/client_certificates.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>

#include <array>
#include <vector>

#include "proto/refusal_log.h"
#include "proto/x509_text.h"

namespace hvd::proto {

namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

constexpr int kSecurityLevel = 2;

// Every certificate of `pem`, in order, up to the first that does not parse.
std::vector<X509Ptr> certificates_in(std::string_view pem) {
  std::vector<X509Ptr> certs;
  if (pem.empty()) return certs;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  while (bio) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    certs.emplace_back(cert, &X509_free);
  }
  ERR_clear_error();  // the end of the text reads as an error
  return certs;
}

using Kind = ClientCertificateCheck::Kind;

// The kind and the reason of X509_verify_cert's `error` about `cert`.
std::pair<Kind, std::string> reason_of(int error, X509* cert) {
  const std::string who = subject_of(cert);
  switch (error) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return {Kind::kUnknownCa, "unknown CA (the certificate " + who + ", issued by " +
                                    issuer_of(cert) + ", is not signed by a CA of --tls-ca)"};
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return {Kind::kExpired, "expired certificate (" + who + " expired on " +
                                  time_text(X509_get0_notAfter(cert)) + ")"};
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return {Kind::kNotYetValid, "certificate not valid yet (" + who + " is not valid before " +
                                      time_text(X509_get0_notBefore(cert)) +
                                      "; are the hosts' clocks in sync?)"};
    case X509_V_ERR_INVALID_PURPOSE:
      return {Kind::kNotForClients,
              "certificate not for TLS clients (" + who +
                  ": its extendedKeyUsage lacks clientAuth)"};
    default:
      return {Kind::kOther,
              std::string("certificate refused (") + who + ": " +
                  X509_verify_cert_error_string(error) + ")"};
  }
}

// One log per kind of refusal, so that a flood of one kind hides no other.
void log_refused(const ClientCertificateCheck::Verdict& verdict) {
  static std::array<RefusalLog, 7> logs{
      RefusalLog(std::chrono::seconds(10)), RefusalLog(std::chrono::seconds(10)),
      RefusalLog(std::chrono::seconds(10)), RefusalLog(std::chrono::seconds(10)),
      RefusalLog(std::chrono::seconds(10)), RefusalLog(std::chrono::seconds(10)),
      RefusalLog(std::chrono::seconds(10))};
  const auto kind = static_cast<size_t>(verdict.kind);
  if (auto line = logs[kind % logs.size()].admit(
          "refused TLS handshake from " + verdict.peer + ": " + verdict.reason,
          RefusalLog::Clock::now())) {
    spdlog::warn("{}", *line);
  }
}

class Verifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit Verifier(std::shared_ptr<const ClientCertificateCheck> check)
      : check_(std::move(check)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    const grpc::string_ref leaf = request->peer_cert();
    const grpc::string_ref chain = request->peer_cert_full_chain();
    const auto verdict = check_->check(std::string_view(leaf.data(), leaf.size()),
                                       std::string_view(chain.data(), chain.size()));
    if (verdict.kind == Kind::kAccepted) {
      *sync_status = grpc::Status::OK;
    } else {
      log_refused(verdict);
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                  "client certificate refused: " + verdict.reason);
    }
    return true;  // done, synchronously
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  const std::shared_ptr<const ClientCertificateCheck> check_;
};

}  // namespace

struct ClientCertificateCheck::Store {
  ~Store() { X509_STORE_free(store); }
  X509_STORE* store = nullptr;
};

common::Result<std::shared_ptr<const ClientCertificateCheck>> ClientCertificateCheck::create(
    const std::string& ca_pem) {
  auto store = std::make_unique<Store>();
  store->store = X509_STORE_new();
  if (store->store == nullptr) return common::internal_error("X509_STORE_new failed");
  const auto roots = certificates_in(ca_pem);
  for (const auto& root : roots) {
    if (X509_STORE_add_cert(store->store, root.get()) != 1) {
      ERR_clear_error();  // a duplicate certificate in the bundle
    }
  }
  if (roots.empty()) return common::invalid_argument("--tls-ca holds no certificate");
  return std::shared_ptr<const ClientCertificateCheck>(
      new ClientCertificateCheck(std::move(store)));
}

ClientCertificateCheck::ClientCertificateCheck(std::unique_ptr<Store> store)
    : store_(std::move(store)) {}

ClientCertificateCheck::~ClientCertificateCheck() = default;

ClientCertificateCheck::Verdict ClientCertificateCheck::check(std::string_view leaf_pem,
                                                              std::string_view chain_pem,
                                                              std::time_t now) const {
  Verdict verdict;
  auto leaf = certificates_in(leaf_pem);
  if (leaf.empty()) {
    verdict.kind = Kind::kNoCertificate;
    verdict.peer = "a client without a certificate";
    verdict.reason = "no client certificate (mutual TLS: give hvdrun --tls-cert and --tls-key)";
    return verdict;
  }
  X509* cert = leaf.front().get();
  verdict.peer = "tls:" + subject_of(cert);
  // The other certificates it sent may be intermediates; never trusted as such.
  auto sent = certificates_in(chain_pem);
  struct FreeStack {
    void operator()(STACK_OF(X509) * stack) const { sk_X509_free(stack); }
  };
  std::unique_ptr<STACK_OF(X509), FreeStack> untrusted(sk_X509_new_null());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      &X509_STORE_CTX_free);
  if (!untrusted || !ctx) {
    verdict.kind = Kind::kOther;
    verdict.reason = "out of memory";
    return verdict;
  }
  for (const auto& other : sent) sk_X509_push(untrusted.get(), other.get());
  int ok = X509_STORE_CTX_init(ctx.get(), store_->store, cert, untrusted.get());
  if (ok == 1) {
    // What OpenSSL checks of a client inside a handshake: the TLS client
    // purpose and trust settings.
    ok = X509_STORE_CTX_set_default(ctx.get(), "ssl_client");
  }
  if (ok == 1) {
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_time(param, now);
    // Every certificate of --tls-ca is a trust anchor, an intermediate CA
    // too, as gRPC's own check inside the handshake has it.
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
    // The key sizes and signatures OpenSSL's default security level on
    // Debian (2) accepts inside a handshake: RSA keys of 2048 bits and more,
    // no SHA-1 or MD5 signatures.
    X509_VERIFY_PARAM_set_auth_level(param, kSecurityLevel);
    ok = X509_verify_cert(ctx.get());
  }
  if (ok == 1) {
    ERR_clear_error();
    return verdict;  // accepted
  }
  int error = X509_STORE_CTX_get_error(ctx.get());
  X509* failed = X509_STORE_CTX_get_current_cert(ctx.get());
  auto [kind, reason] = reason_of(error == X509_V_OK ? X509_V_ERR_UNSPECIFIED : error,
                                  failed != nullptr ? failed : cert);
  ERR_clear_error();
  verdict.kind = kind;
  verdict.reason = std::move(reason);
  return verdict;
}

std::shared_ptr<grpc::experimental::CertificateVerifier> client_certificate_verifier(
    std::shared_ptr<const ClientCertificateCheck> check) {
  return grpc::experimental::ExternalCertificateVerifier::Create<Verifier>(std::move(check));
}

}  // namespace hvd::proto
