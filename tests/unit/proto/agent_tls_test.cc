// Mutual TLS end to end: a real GrpcServer serving an AgentService with the
// credentials of proto/tls_credentials.h, and clients with and without
// certificates. The certificates are made with openssl at test time.
#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/agent/agent_service.h"
#include "proto/grpc_server.h"
#include "hvd/v1/agent.grpc.pb.h"
#include "proto/agent_auth.h"
#include "proto/tls_credentials.h"
#include "test_certs.h"
#include "tests/unit/support/untrusted_input.h"

using namespace std::chrono_literals;
using hvd::daemon::AgentOptions;
using hvd::daemon::AgentService;
using hvd::daemon::GrpcServer;
using hvd::daemon::ServerOptions;
using hvd::proto::TlsFiles;
using hvd::proto::test::TestCerts;
namespace v1 = hvd::v1;

namespace {

constexpr char kSecret[] = "tls-test-agent-secret-0123456789";

struct TlsAgent {
  explicit TlsAgent(const TestCerts& certs) : service(AgentOptions{kSecret, 3}) {
    auto credentials =
        hvd::proto::server_credentials(TlsFiles{certs.server_cert, certs.server_key, certs.ca});
    REQUIRE(credentials.is_ok());
    ServerOptions options;
    options.credentials = *credentials;
    auto started = GrpcServer::start("127.0.0.1", 0, {&service}, options);
    REQUIRE(started.is_ok());
    server = std::move(started).value();
  }
  ~TlsAgent() {
    service.shutdown(1000ms);
    server->shutdown(1000ms);
  }

  AgentService service;
  std::unique_ptr<GrpcServer> server;
};

// Info over a channel with `credentials`, proving `secret`.
grpc::Status info(const std::string& address,
                  const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  const std::string& secret, v1::InfoReply* reply) {
  auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, credentials));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  hvd::proto::attach_agent_proof(ctx, secret, "Agent.Info");
  return stub->Info(&ctx, v1::InfoRequest(), reply);
}

std::shared_ptr<grpc::ChannelCredentials> client_tls(const TlsFiles& files) {
  auto credentials = hvd::proto::channel_credentials(files);
  REQUIRE(credentials.is_ok());
  return *credentials;
}

// Client credentials without hvd's checks of the files (an expired client
// certificate, which channel_credentials refuses).
std::shared_ptr<grpc::ChannelCredentials> raw_client_tls(const std::string& cert,
                                                         const std::string& key,
                                                         const std::string& ca) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = hvd::proto::test::read_file(ca);
  options.pem_cert_chain = hvd::proto::test::read_file(cert);
  options.pem_private_key = hvd::proto::test::read_file(key);
  return grpc::SslCredentials(options);
}

// What the process logs while it lives (the default logger's lines, also
// still written to its own sinks).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_, /*force_flush=*/true);
    std::vector<spdlog::sink_ptr> sinks = previous_->sinks();
    sinks.push_back(sink);
    capturing_ = std::make_shared<spdlog::logger>(previous_->name(), sinks.begin(), sinks.end());
    capturing_->set_level(spdlog::level::info);
    spdlog::set_default_logger(capturing_);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return stream_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_, capturing_;
  std::ostringstream stream_;
};

}  // namespace

TEST_CASE("Agent over mutual TLS serves clients with a certificate and the secret only") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  TlsAgent agent(*certs);
  const std::string address = agent.server->address();
  const auto with_cert = client_tls({certs->client_cert, certs->client_key, certs->ca});

  SECTION("a client with a certificate of the CA and the right secret") {
    v1::InfoReply reply;
    auto status = info(address, with_cert, kSecret, &reply);
    INFO(status.error_message());
    REQUIRE(status.ok());
    CHECK(reply.slots() == 3);
    CHECK_FALSE(reply.hostname().empty());

    // Launch and Watch work over the same credentials.
    auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, with_cert));
    v1::LaunchRequest launch;
    launch.set_job_id("tls-job");
    auto* worker = launch.add_workers();
    worker->add_argv("sh");
    worker->add_argv("-c");
    worker->add_argv("echo over-tls");
    (*worker->mutable_env())["PATH"] = "/usr/bin:/bin";
    grpc::ClientContext lctx;
    hvd::proto::attach_agent_proof(lctx, kSecret, "Agent.Launch");
    v1::LaunchReply started;
    REQUIRE(stub->Launch(&lctx, launch, &started).ok());
    grpc::ClientContext wctx;
    wctx.set_deadline(std::chrono::system_clock::now() + 10s);
    hvd::proto::attach_agent_proof(wctx, kSecret, "Agent.Watch");
    v1::WatchRequest wreq;
    wreq.set_job_id("tls-job");
    auto reader = stub->Watch(&wctx, wreq);
    std::vector<v1::WatchEvent> events;
    v1::WatchEvent event;
    while (reader->Read(&event)) events.push_back(event);
    REQUIRE(reader->Finish().ok());
    REQUIRE(events.size() == 2);
    CHECK(events[0].output().lines(0) == "over-tls");
    CHECK(events[1].exit().exit_code() == 0);
  }
  SECTION("a client with a certificate but the wrong secret") {
    v1::InfoReply reply;
    auto status = info(address, with_cert, "not-the-secret-of-this-agent", &reply);
    CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  // Issue 29: the agent verifies client certificates itself, to log why it
  // refuses one; each refusal is still a failed handshake, before any call.
  SECTION("a TLS client without a certificate") {
    LogCapture log;
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = hvd::proto::test::read_file(certs->ca);
    v1::InfoReply reply;
    auto status = info(address, grpc::SslCredentials(options), kSecret, &reply);
    CHECK_FALSE(status.ok());
    CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED);  // never got that far
    CHECK_THAT(log.text(), Catch::Contains("refused TLS handshake from a client without a "
                                           "certificate: no client certificate"));
  }
  SECTION("a client with a certificate of another CA") {
    LogCapture log;
    v1::InfoReply reply;
    auto status = info(address, client_tls({certs->rogue_cert, certs->rogue_key, certs->ca}),
                       kSecret, &reply);
    CHECK_FALSE(status.ok());
    CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED);
    CHECK_THAT(log.text(), Catch::Contains("refused TLS handshake from tls:CN=rogue: unknown CA") &&
                               Catch::Contains("issued by CN=other-ca"));
  }
  SECTION("a client with an expired certificate of the CA") {
    LogCapture log;
    v1::InfoReply reply;
    auto status = info(address, raw_client_tls(certs->expired_cert, certs->expired_key, certs->ca),
                       kSecret, &reply);
    CHECK_FALSE(status.ok());
    CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED);
    CHECK_THAT(log.text(), Catch::Contains("refused TLS handshake from tls:CN=expired: expired "
                                           "certificate (CN=expired expired on "));
  }
  SECTION("a client with the certificate of a server (not for TLS clients)") {
    // server.pem's extendedKeyUsage is serverAuth only: OpenSSL refuses it
    // as a client certificate inside a handshake, and so does the agent.
    v1::InfoReply reply;
    auto status = info(address, client_tls({certs->server_cert, certs->server_key, certs->ca}),
                       kSecret, &reply);
    CHECK_FALSE(status.ok());
    CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED);
  }
  SECTION("a client that does not trust the agent's CA") {
    v1::InfoReply reply;
    auto status =
        info(address, client_tls({certs->client_cert, certs->client_key, certs->other_ca}), kSecret,
             &reply);
    CHECK_FALSE(status.ok());
  }
  SECTION("a plaintext client") {
    v1::InfoReply reply;
    auto status = info(address, grpc::InsecureChannelCredentials(), kSecret, &reply);
    CHECK_FALSE(status.ok());
    CHECK(status.error_code() != grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST_CASE("TLS credentials need all three files, each readable PEM") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  auto partial = hvd::proto::server_credentials(TlsFiles{certs->server_cert, "", certs->ca});
  REQUIRE_FALSE(partial.is_ok());
  CHECK_THAT(partial.status().message(), Catch::Contains("--tls-key"));
  auto missing = hvd::proto::server_credentials(
      TlsFiles{certs->server_cert, certs->dir + "/absent.key", certs->ca});
  REQUIRE_FALSE(missing.is_ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("absent.key"));
  const std::string text_key = certs->dir + "/not-pem.key";
  std::ofstream(text_key) << "subjectAltName=IP:127.0.0.1\n";
  REQUIRE(::chmod(text_key.c_str(), 0600) == 0);
  auto not_pem =
      hvd::proto::server_credentials(TlsFiles{certs->server_cert, text_key, certs->ca});
  REQUIRE_FALSE(not_pem.is_ok());
  CHECK_THAT(not_pem.status().message(), Catch::Contains("not PEM"));
}

namespace {

// A copy of `from` at `to` with `mode`.
void copy_with_mode(const std::string& from, const std::string& to, mode_t mode) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  REQUIRE(::chmod(to.c_str(), mode) == 0);
}

}  // namespace

// Issue 21: a private key others can read was accepted; it is refused like a
// secret file, on both sides.
TEST_CASE("a TLS private key that others can read is refused, naming the file and its mode") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  const std::string open_key = certs->dir + "/open.key";
  copy_with_mode(certs->server_key, open_key, 0644);
  auto server = hvd::proto::server_credentials(TlsFiles{certs->server_cert, open_key, certs->ca});
  REQUIRE_FALSE(server.is_ok());
  CHECK(server.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(server.status().message(), Catch::Contains("--tls-key") &&
                                            Catch::Contains(open_key) &&
                                            Catch::Contains("mode 0644"));
  CHECK_THAT(server.status().message(), !Catch::Contains("PRIVATE KEY"));
  auto client = hvd::proto::channel_credentials(TlsFiles{certs->client_cert, open_key, certs->ca});
  REQUIRE_FALSE(client.is_ok());
  CHECK_THAT(client.status().message(), Catch::Contains("mode 0644"));
  // Certificates and CA bundles are public: 0644 is fine for them.
  CHECK(hvd::proto::server_credentials(TlsFiles{certs->server_cert, certs->server_key, certs->ca})
            .is_ok());
}

// Issue 21: like the secret, a FIFO given as a TLS file must not hang.
TEST_CASE("a FIFO given as a TLS file is refused at once") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  const std::string fifo = certs->dir + "/fifo.pem";
  auto result = hvd::test::read_fifo_within_3s(fifo, [&] {
    return hvd::proto::server_credentials(TlsFiles{fifo, certs->server_key, certs->ca});
  });
  REQUIRE_FALSE(result.is_ok());
  CHECK_THAT(result.status().message(),
             Catch::Contains("--tls-cert") && Catch::Contains("not a regular file"));
}
