// Issue 29 item 6: the TLS files are checked as a set before gRPC sees them
// (a key of another certificate, a key given as a certificate, ... were
// taken without a word and failed every handshake later), the agent's own
// check of client certificates tells why it refuses one, and gRPC's
// handshake lines become hvd lines with a reason.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "proto/client_certificates.h"
#include "proto/grpc_log.h"
#include "proto/tls_credentials.h"
#include "proto/tls_files.h"
#include "test_certs.h"

using hvd::proto::ClientCertificateCheck;
using hvd::proto::TlsFiles;
using hvd::proto::test::read_file;

namespace {

// A copy of `from` named `name` in the certificates' directory, with `mode`.
std::string copy_as(const hvd::proto::test::TestCerts& certs, const std::string& from,
                    const std::string& name, mode_t mode = 0600) {
  const std::string to = certs.dir + "/" + name;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  REQUIRE(::chmod(to.c_str(), mode) == 0);
  return to;
}

// The message of refusing `files` on both sides; the same on both.
std::string refusal(const TlsFiles& files) {
  auto server = hvd::proto::server_credentials(files);
  REQUIRE_FALSE(server.is_ok());
  CHECK(server.status().code() == hvd::common::StatusCode::kInvalidArgument);
  auto client = hvd::proto::channel_credentials(files);
  REQUIRE_FALSE(client.is_ok());
  CHECK(client.status().message() == server.status().message());
  // One line, and never a key.
  CHECK(server.status().message().find('\n') == std::string::npos);
  CHECK_THAT(server.status().message(), !Catch::Contains("PRIVATE KEY-----"));
  return server.status().message();
}

}  // namespace

TEST_CASE("a TLS key that does not match the certificate is refused, naming both files") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  const std::string key = copy_as(*certs, certs->client_key, "other.key");
  const std::string message = refusal({certs->server_cert, key, certs->ca});
  CHECK(message == "--tls-key file '" + key + "' does not match the certificate of --tls-cert file '" +
                       certs->server_cert +
                       "' (CN=server): give the key that certificate was made for");
  // The matching pairs pass, on both sides.
  CHECK(hvd::proto::server_credentials({certs->server_cert, certs->server_key, certs->ca}).is_ok());
  CHECK(hvd::proto::channel_credentials({certs->client_cert, certs->client_key, certs->ca}).is_ok());
}

TEST_CASE("a TLS file holding the wrong kind of PEM block is refused, naming file and kind") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  SECTION("a key given as --tls-cert") {
    const std::string key_as_cert = copy_as(*certs, certs->server_key, "key-as-cert.pem");
    CHECK(refusal({key_as_cert, certs->server_key, certs->ca}) ==
          "--tls-cert file '" + key_as_cert + "' holds a private key, not a certificate");
  }
  SECTION("a key given as --tls-ca") {
    const std::string key_as_ca = copy_as(*certs, certs->dir + "/ca.key", "key-as-ca.pem");
    CHECK(refusal({certs->server_cert, certs->server_key, key_as_ca}) ==
          "--tls-ca file '" + key_as_ca + "' holds a private key, not a certificate");
  }
  SECTION("a certificate given as --tls-key") {
    const std::string cert_as_key = copy_as(*certs, certs->server_cert, "cert-as-key.key");
    CHECK(refusal({certs->server_cert, cert_as_key, certs->ca}) ==
          "--tls-key file '" + cert_as_key + "' holds a certificate, not a private key");
  }
  SECTION("a certificate request given as --tls-cert") {
    CHECK_THAT(refusal({certs->dir + "/server.csr", certs->server_key, certs->ca}),
               Catch::Contains("server.csr' holds a certificate request (CSR), not a certificate"));
  }
  SECTION("a truncated certificate") {
    const std::string pem = read_file(certs->server_cert);
    const std::string half = certs->dir + "/half.pem";
    std::ofstream(half) << pem.substr(0, pem.size() / 2);
    CHECK_THAT(refusal({half, certs->server_key, certs->ca}),
               Catch::Contains("half.pem' has a PEM block 'BEGIN CERTIFICATE' without its END"));
  }
  SECTION("a certificate whose base64 is damaged") {
    std::string pem = read_file(certs->server_cert);
    pem[pem.find('\n') + 10] = '*';
    const std::string bad = certs->dir + "/bad.pem";
    std::ofstream(bad) << pem;
    CHECK_THAT(refusal({certs->server_cert, certs->server_key, bad}),
               Catch::StartsWith("--tls-ca file '" + bad + "': certificate 1 cannot be parsed ("));
  }
  SECTION("an encrypted key") {
    const std::string encrypted = certs->dir + "/encrypted.key";
    const std::string command = "openssl pkey -in '" + certs->server_key +
                                "' -aes256 -passout pass:hvd-test -out '" + encrypted +
                                "' 2>/dev/null";
    REQUIRE(std::system(command.c_str()) == 0);
    REQUIRE(::chmod(encrypted.c_str(), 0600) == 0);
    CHECK_THAT(refusal({certs->server_cert, encrypted, certs->ca}),
               Catch::StartsWith("--tls-key file '" + encrypted +
                                 "' holds an encrypted private key: TLS needs it without a "
                                 "passphrase"));
  }
}

TEST_CASE("this side's own certificate must be valid now") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  CHECK_THAT(refusal({certs->expired_cert, certs->expired_key, certs->ca}),
             Catch::StartsWith("--tls-cert file '" + certs->expired_cert +
                               "': its certificate (CN=expired) expired on 20"));
  auto early = hvd::proto::read_tls_files({certs->server_cert, certs->server_key, certs->ca},
                                          std::time(nullptr) - 3 * 24 * 3600);
  REQUIRE_FALSE(early.is_ok());
  CHECK_THAT(early.status().message(),
             Catch::Contains("its certificate (CN=server) is not valid before 20") &&
                 Catch::Contains("(is this host's clock right?)"));
}

// Item 5 for the key: /proc/self/environ is a 0400 file of this user.
TEST_CASE("a TLS key on a kernel pseudo filesystem is refused") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  CHECK_THAT(refusal({certs->server_cert, "/proc/self/environ", certs->ca}),
             Catch::StartsWith("--tls-key file '/proc/self/environ' is on the kernel's proc "
                               "filesystem, not on disk"));
}

TEST_CASE("the agent's check of client certificates says why it refuses one") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  auto check = ClientCertificateCheck::create(read_file(certs->ca));
  REQUIRE(check.is_ok());
  using Kind = ClientCertificateCheck::Kind;
  auto verdict = [&](const std::string& cert_file) {
    const std::string pem = cert_file.empty() ? "" : read_file(cert_file);
    return (*check)->check(pem, pem);
  };
  const auto good = verdict(certs->client_cert);
  CHECK(good.kind == Kind::kAccepted);
  CHECK(good.reason.empty());
  CHECK(good.peer == "tls:CN=client");

  const auto none = verdict("");
  CHECK(none.kind == Kind::kNoCertificate);
  CHECK_THAT(none.reason, Catch::StartsWith("no client certificate"));

  const auto rogue = verdict(certs->rogue_cert);
  CHECK(rogue.kind == Kind::kUnknownCa);
  CHECK(rogue.peer == "tls:CN=rogue");
  CHECK(rogue.reason == "unknown CA (the certificate CN=rogue, issued by CN=other-ca, is not "
                        "signed by a CA of --tls-ca)");

  const auto expired = verdict(certs->expired_cert);
  CHECK(expired.kind == Kind::kExpired);
  CHECK_THAT(expired.reason, Catch::StartsWith("expired certificate (CN=expired expired on 20"));

  // A day before the client certificate's start.
  const std::string client = read_file(certs->client_cert);
  const auto early = (*check)->check(client, client, std::time(nullptr) - 3 * 24 * 3600);
  CHECK(early.kind == Kind::kNotYetValid);
  CHECK_THAT(early.reason, Catch::Contains("are the hosts' clocks in sync?"));

  // server.pem is for TLS servers only (extendedKeyUsage=serverAuth).
  const auto server = verdict(certs->server_cert);
  CHECK(server.kind == Kind::kNotForClients);
  CHECK_THAT(server.reason, Catch::Contains("lacks clientAuth"));

  // The CA certificate itself is no client certificate either.
  CHECK(verdict(certs->ca).kind != Kind::kAccepted);
  // Garbage reads as no certificate.
  CHECK((*check)->check("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", "")
            .kind == Kind::kNoCertificate);
}

// As gRPC's own check inside the handshake (hvd-agent before issue 29):
// intermediates the client sends are used, and every certificate of
// --tls-ca is a trust anchor, an intermediate CA too.
TEST_CASE("the agent's check of client certificates follows chains as gRPC's did") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  const std::string make =
      "cd '" + certs->dir +
      "' && printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' "
      "> inter.ext && printf 'extendedKeyUsage=clientAuth\n' > leaf.ext"
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout inter.key"
      " -out inter.csr -subj /CN=inter"
      " && openssl x509 -req -in inter.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out inter.pem"
      " -days 2 -extfile inter.ext"
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout leaf.key"
      " -out leaf.csr -subj /CN=leaf"
      " && openssl x509 -req -in leaf.csr -CA inter.pem -CAkey inter.key -CAcreateserial"
      " -out leaf.pem -days 2 -extfile leaf.ext >/dev/null 2>&1";
  REQUIRE(std::system(make.c_str()) == 0);
  const std::string leaf = read_file(certs->dir + "/leaf.pem");
  const std::string inter = read_file(certs->dir + "/inter.pem");
  using Kind = ClientCertificateCheck::Kind;

  auto root_only = ClientCertificateCheck::create(read_file(certs->ca));
  REQUIRE(root_only.is_ok());
  CHECK((*root_only)->check(leaf, leaf + inter).kind == Kind::kAccepted);
  const auto without_intermediate = (*root_only)->check(leaf, leaf);
  CHECK(without_intermediate.kind == Kind::kUnknownCa);
  CHECK_THAT(without_intermediate.reason, Catch::Contains("issued by CN=inter"));

  auto intermediate_only = ClientCertificateCheck::create(inter);
  REQUIRE(intermediate_only.is_ok());
  CHECK((*intermediate_only)->check(leaf, leaf).kind == Kind::kAccepted);
  // A client cannot bring its own trust anchor.
  const std::string other = read_file(certs->other_ca);
  CHECK((*root_only)->check(read_file(certs->rogue_cert), read_file(certs->rogue_cert) + other)
            .kind == Kind::kUnknownCa);
}

TEST_CASE("gRPC's lines for failed TLS handshakes become hvd lines with what they mean") {
  using hvd::proto::grpc_log_line;
  CHECK(grpc_log_line("Handshake failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL "
                      "routines::wrong version number.") ==
        "TLS handshake failed: wrong version number (the peer does not speak TLS: plaintext on "
        "one side?)");
  CHECK(grpc_log_line("Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL "
                      "routines::certificate verify failed.") ==
        "TLS handshake failed: certificate verify failed (the other side's certificate is not "
        "signed by --tls-ca, has expired or is not for this name)");
  CHECK(grpc_log_line("Handshake failed with fatal error SSL_ERROR_SSL: error:0A000418:SSL "
                      "routines::tlsv1 alert unknown ca.") ==
        "TLS handshake failed: tlsv1 alert unknown ca (the other side does not trust this "
        "side's CA)");
  CHECK(hvd::proto::is_handshake_failure("Handshake failed with fatal error SSL_ERROR_SSL: x"));
  CHECK_FALSE(hvd::proto::is_handshake_failure("Socket closed"));
  // Other lines keep their text, escaped.
  CHECK(grpc_log_line("bad \x1b[2J thing") == "gRPC: bad \\x1b[2J thing");
}
