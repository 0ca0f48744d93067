// Issue 21: a TLS mismatch between hvdrun and an agent was reported only
// when the whole start timeout had passed (the channel retried the failed
// handshake until then); it is reported at once, naming TLS.
#include <catch2/catch.hpp>
#include <chrono>

#include "daemon/agent/agent_service.h"
#include "proto/grpc_server.h"
#include "launcher/host_agents.h"
#include "proto/tls_credentials.h"
#include "tests/unit/proto/test_certs.h"

using namespace hvd::launcher;
using namespace std::chrono_literals;
using hvd::proto::TlsFiles;

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef";

// hvd-agent on another host, serving mutual TLS (or plaintext when `tls` is
// not enabled).
struct TlsRemoteAgent {
  hvd::daemon::AgentService service{hvd::daemon::AgentOptions{kSecret, 2}};
  std::unique_ptr<hvd::daemon::GrpcServer> server;
  explicit TlsRemoteAgent(const TlsFiles& tls) {
    auto credentials = hvd::proto::server_credentials(tls);
    REQUIRE(credentials.is_ok());
    hvd::daemon::ServerOptions options;
    options.credentials = *credentials;
    auto s = hvd::daemon::GrpcServer::start("127.0.0.1", 0, {&service}, options);
    REQUIRE(s.is_ok());
    server = std::move(s).value();
  }
  ~TlsRemoteAgent() {
    service.shutdown(1s);
    server->shutdown(1s);
  }
};

// info_all against `agent` with the client side `tls`: the error and how long it took.
std::pair<hvd::common::Status, std::chrono::steady_clock::duration> info_error(
    const TlsRemoteAgent& agent, const TlsFiles& tls, std::chrono::seconds timeout) {
  auto channel = hvd::proto::channel_credentials(tls);
  REQUIRE(channel.is_ok());
  auto agents = HostAgents::start({{"h2", false, agent.server->address(), {0}}},
                                  RemoteCredentials{kSecret, *channel}, 1);
  REQUIRE(agents.is_ok());
  const auto start = std::chrono::steady_clock::now();
  auto infos = (*agents)->info_all(timeout);
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(infos.is_ok());
  return {infos.status(), took};
}

}  // namespace

TEST_CASE("a TLS handshake failure with an agent is reported at once, naming TLS") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  const TlsFiles agent_tls{certs->server_cert, certs->server_key, certs->ca};
  const TlsFiles client_tls{certs->client_cert, certs->client_key, certs->ca};
  struct Case {
    const char* what;
    TlsFiles agent, client;
  };
  auto c = GENERATE_COPY(
      Case{"hvdrun does not trust the agent's CA", agent_tls,
           {certs->client_cert, certs->client_key, certs->other_ca}},
      // A certificate of another CA (the other CA's own, self-signed).
      Case{"the agent does not trust hvdrun's certificate", agent_tls,
           {certs->other_ca, certs->dir + "/other-ca.key", certs->ca}},
      Case{"hvdrun without TLS, the agent with it", agent_tls, {}},
      Case{"hvdrun with TLS, the agent without it", {}, client_tls});
  INFO(c.what);
  TlsRemoteAgent agent(c.agent);
  auto [status, took] = info_error(agent, c.client, 20s);
  CHECK(took < 8s);
  CHECK(status.code() == hvd::common::StatusCode::kUnavailable);
  CHECK_THAT(status.message(), Catch::Contains("host h2") && Catch::Contains("TLS"));
  CHECK(status.message().find('\n') == std::string::npos);
}
