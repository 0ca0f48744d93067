// Calls are admitted on their headers, before gRPC reads their body (issue
// 21): a GrpcServer serving a gated service, plaintext and over TLS, and
// clients sending large requests with and without credentials. The service
// counts the calls that reached a handler and the gate what it was shown.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvd/v1/agent.grpc.pb.h"
#include "proto/call_gate.h"
#include "proto/grpc_server.h"
#include "proto/rpc_auth.h"
#include "proto/tls_credentials.h"
#include "test_certs.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::ServerOptions;
using hvd::proto::CallGate;
namespace v1 = hvd::v1;

namespace {

constexpr char kToken[] = "call-gate-test-token";
constexpr int kLaunchLimit = 16 << 20;

// An Agent service whose gate wants a bearer token; its handlers count.
class CountingService final : public v1::Agent::Service, public hvd::proto::GatedService {
 public:
  CountingService()
      : gate_(v1::Agent::service_full_name(), {{"Launch", kLaunchLimit}, {"Info", 1024}},
              [this](const std::string& method, std::optional<std::string_view> authorization,
                     std::string_view peer) {
                checks.fetch_add(1);
                {
                  std::lock_guard lock(mu);
                  methods.push_back(method);
                  peers.emplace_back(peer);
                }
                if (authorization && *authorization == std::string("Bearer ") + kToken) {
                  return grpc::Status::OK;
                }
                return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, method + " refused");
              }) {}

  hvd::proto::CallGate& call_gate() override { return gate_; }

  grpc::Status Launch(grpc::ServerContext*, const v1::LaunchRequest* req,
                      v1::LaunchReply*) override {
    handled.fetch_add(1);
    return gate_.admitted("Launch", *req);
  }
  grpc::Status Info(grpc::ServerContext*, const v1::InfoRequest* req, v1::InfoReply*) override {
    handled.fetch_add(1);
    return gate_.admitted("Info", *req);
  }

  std::atomic<int> handled{0};
  std::atomic<int> checks{0};
  std::mutex mu;
  std::vector<std::string> methods;
  std::vector<std::string> peers;  // as the gate was told them (for log lines)

 private:
  CallGate gate_;
};

// A Launch request of about `bytes` bytes.
v1::LaunchRequest big_launch(size_t bytes) {
  v1::LaunchRequest req;
  req.set_job_id("job");
  auto* worker = req.add_workers();
  worker->add_argv(std::string(bytes, 'x'));
  return req;
}

std::shared_ptr<grpc::Channel> channel_to(const std::string& address,
                                          std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, std::move(creds), args);
}

grpc::Status launch(const std::shared_ptr<grpc::Channel>& channel, const v1::LaunchRequest& req,
                    const std::string& token) {
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  if (!token.empty()) hvd::proto::attach_token(ctx, token);
  v1::LaunchReply reply;
  return stub->Launch(&ctx, req, &reply);
}

void check_gate(const std::string& address, std::shared_ptr<grpc::ChannelCredentials> creds,
                CountingService& service) {
  auto channel = channel_to(address, std::move(creds));
  const auto req = big_launch(8 << 20);

  // Unauthenticated 8 MiB: refused by the gate, no handler ran.
  auto refused = launch(channel, req, "");
  CHECK(refused.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(refused.error_message() == "Agent.Launch refused");
  auto wrong = launch(channel, req, "wrong-token");
  CHECK(wrong.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(service.handled.load() == 0);
  CHECK(service.checks.load() == 2);

  // With the token: the handler runs, once, after one check.
  auto admitted = launch(channel, req, kToken);
  CHECK(admitted.ok());
  CHECK(service.handled.load() == 1);
  CHECK(service.checks.load() == 3);
  std::lock_guard lock(service.mu);
  CHECK(service.methods == std::vector<std::string>{"Agent.Launch", "Agent.Launch",
                                                    "Agent.Launch"});
}

}  // namespace

TEST_CASE("A gated service refuses unauthenticated calls before their handler, plaintext") {
  CountingService service;
  auto server = GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(server.is_ok());
  check_gate((*server)->address(), grpc::InsecureChannelCredentials(), service);
  (*server)->shutdown(1s);
}

TEST_CASE("A gated service refuses unauthenticated calls before their handler, over TLS") {
  const auto* certs = hvd::proto::test::shared_test_certs_or_warn();
  if (!certs) return;
  CountingService service;
  auto credentials = hvd::proto::server_credentials(
      hvd::proto::TlsFiles{certs->server_cert, certs->server_key, certs->ca});
  REQUIRE(credentials.is_ok());
  ServerOptions options;
  options.credentials = *credentials;
  auto server = GrpcServer::start("127.0.0.1", 0, {&service}, options);
  REQUIRE(server.is_ok());
  auto client = hvd::proto::channel_credentials(
      hvd::proto::TlsFiles{certs->client_cert, certs->client_key, certs->ca});
  REQUIRE(client.is_ok());
  check_gate((*server)->address(), *client, service);
  // Refusals over TLS name the client's certificate (issue 29: the agent
  // verifies client certificates itself; gRPC still names the peer).
  {
    std::lock_guard lock(service.mu);
    REQUIRE_FALSE(service.peers.empty());
    CHECK(service.peers.front() == "tls:client");
  }
  (*server)->shutdown(1s);
}

TEST_CASE("A gated service refuses requests over a method's limit, naming method and limit") {
  CountingService service;
  auto server = GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(server.is_ok());
  auto channel = channel_to((*server)->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);

  SECTION("a method with a limit below the server's") {
    // Info takes 1 KiB; an InfoRequest has no fields, so send a Launch-sized
    // message to the Info method through a generic stub.
    grpc::GenericStub generic(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    hvd::proto::attach_token(ctx, kToken);
    std::string bytes;
    // Unknown fields of an InfoRequest: parsed, kept, counted.
    big_launch(4096).SerializeToString(&bytes);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    generic.UnaryCall(&ctx, "/hvd.v1.Agent/Info", grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) {
                        std::lock_guard lock(mu);
                        status = s;
                        done = true;
                        cv.notify_all();
                      });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(status.error_message().find("Agent.Info") != std::string::npos);
    CHECK(status.error_message().find("limit of 1024 bytes") != std::string::npos);
  }
  SECTION("the server's limit is the largest method limit") {
    auto status = launch(channel, big_launch(kLaunchLimit + 1), kToken);
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(service.handled.load() == 0);
  }
  (*server)->shutdown(1s);
}

TEST_CASE("A gated service refuses methods its gate does not know and unknown services") {
  CountingService service;
  auto server = GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(server.is_ok());
  auto channel = channel_to((*server)->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  hvd::proto::attach_token(ctx, kToken);
  v1::SignalReply reply;
  // Signal: no limit in the gate.
  auto status = stub->Signal(&ctx, v1::SignalRequest(), &reply);
  CHECK(status.error_code() == grpc::StatusCode::UNIMPLEMENTED);
  CHECK(status.error_message() == "no method Agent.Signal");
  (*server)->shutdown(1s);
}

TEST_CASE("A gated service served without its gate refuses every call") {
  CountingService service;
  CHECK(service.call_gate().admitted("Info", v1::InfoRequest()).error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
}

TEST_CASE("A gate names a made-up method safely in what it checks and logs") {
  std::vector<std::string> names;
  CallGate gate(v1::Agent::service_full_name(), {{"Info", 16}},
                [&](const std::string& method, std::optional<std::string_view>, std::string_view) {
                  names.push_back(method);
                  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no");
                });
  gate.admit("/hvd.v1.Agent/Info", std::nullopt, "peer");
  gate.admit("/hvd.v1.Agent/In\nfo", std::nullopt, "peer");
  gate.admit("/hvd.v1.Agent/" + std::string(100, 'a'), std::nullopt, "peer");
  CHECK(names == std::vector<std::string>{"Agent.Info", "Agent.(not a method)",
                                          "Agent.(not a method)"});
}
