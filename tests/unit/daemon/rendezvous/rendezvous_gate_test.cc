// The Rendezvous service's call gate (proto/call_gate.h) on a real server:
// the token is checked on the headers (a big unauthenticated Set never
// reaches the store) and requests over their method's limit are refused
// naming the method and the limit.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>

#include "daemon/rendezvous/rendezvous_service.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/grpc_server.h"
#include "proto/rpc_auth.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::RendezvousService;
namespace v1 = hvd::v1;

namespace {

constexpr char kToken[] = "rendezvous-gate-test-token";

std::unique_ptr<grpc::ClientContext> context(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + 20s);
  if (!token.empty()) hvd::proto::attach_token(*ctx, token);
  return ctx;
}

}  // namespace

TEST_CASE("Rendezvous refuses unauthenticated and oversized requests by method") {
  RendezvousService service(kToken, 2);
  // As hvdrun serves it: receive windows of 64 KiB, never grown.
  auto started =
      GrpcServer::start("127.0.0.1", 0, {&service}, hvd::daemon::rendezvous_server_options());
  REQUIRE(started.is_ok());
  auto server = std::move(started).value();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto stub = v1::Rendezvous::NewStub(
      grpc::CreateCustomChannel(server->address(), grpc::InsecureChannelCredentials(), args));

  SECTION("an unauthenticated Set of 8 MiB is refused and stores nothing") {
    v1::SetRequest set;
    set.set_key("k");
    set.set_value(std::string(8 << 20, 'v'));
    v1::SetReply reply;
    auto status = stub->Set(context("").get(), set, &reply);
    CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(status.error_message() == "Rendezvous.Set refused: no credentials");
    auto wrong = stub->Set(context("not-the-token").get(), set, &reply);
    CHECK(wrong.error_message() == "Rendezvous.Set refused: wrong credentials");
    v1::CheckRequest check;
    check.add_keys("k");
    v1::CheckReply ready;
    REQUIRE(stub->Check(context(kToken).get(), check, &ready).ok());
    CHECK_FALSE(ready.ready());
  }
  SECTION("a Join with a host name over its limit") {
    v1::JoinRequest join;
    join.set_rank(0);
    join.set_size(2);
    join.set_host(std::string(10'000, 'h'));
    v1::JoinReply reply;
    auto status = stub->Join(context(kToken).get(), join, &reply);
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK_THAT(status.error_message(), Catch::StartsWith("Rendezvous.Join request of "));
    CHECK_THAT(status.error_message(),
               Catch::EndsWith("over the limit of 8192 bytes for this method"));
  }
  SECTION("a Set over the largest limit, 16 MiB") {
    v1::SetRequest set;
    set.set_key("k");
    set.set_value(std::string((16 << 20) + 1, 'v'));
    v1::SetReply reply;
    auto status = stub->Set(context(kToken).get(), set, &reply);
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  SECTION("a Set of 9 MiB (gloo's full mesh of 65536 ranks) is taken") {
    v1::SetRequest set;
    set.set_key("k");
    set.set_value(std::string(9 << 20, 'v'));
    v1::SetReply reply;
    CHECK(stub->Set(context(kToken).get(), set, &reply).ok());
  }
  service.close();
  server->shutdown(1s);
}
