// The Agent service's call gate (proto/call_gate.h) on a real server: the
// proof is checked once per call, on the headers, and requests over their
// method's limit are refused naming the method and the limit.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "agent_fixture.h"
#include "hvd/v1/agent.grpc.pb.h"
#include "proto/agent_auth.h"
#include "proto/rpc_auth.h"

using namespace std::chrono_literals;
using hvd::daemon::test::agent_context;
using hvd::daemon::test::AgentFixture;
using hvd::daemon::test::kAgentSecret;
namespace v1 = hvd::v1;

namespace {

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

grpc::Status info_with(v1::Agent::Stub& stub, const std::string& proof) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  ctx.AddMetadata(hvd::proto::kAuthMetadataKey, proof);
  v1::InfoReply reply;
  return stub.Info(&ctx, v1::InfoRequest(), &reply);
}

}  // namespace

TEST_CASE("Agent consumes each proof exactly once") {
  AgentFixture agent;
  const std::string proof = hvd::proto::agent_proof(kAgentSecret, "Agent.Info", unix_ms(),
                                                    "0123456789abcdef0123456789abcdef");
  // Checked once: a second check of the same call would find it replayed.
  CHECK(info_with(*agent.stub, proof).ok());
  auto replayed = info_with(*agent.stub, proof);
  CHECK(replayed.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(replayed.error_message() == "Agent.Info refused: replayed credentials");
}

TEST_CASE("Agent refuses requests over their method's limit, naming the method and the limit") {
  AgentFixture agent;
  v1::WatchRequest watch;
  watch.set_job_id(std::string(10'000, 'j'));
  auto ctx = agent_context("Agent.Watch");
  auto reader = agent.stub->Watch(ctx.get(), watch);
  v1::WatchEvent event;
  CHECK_FALSE(reader->Read(&event));
  auto status = reader->Finish();
  CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(status.error_message() ==
        "Agent.Watch request of 10003 bytes is over the limit of 4096 bytes for this method");

  // Without credentials the size is not looked at: the gate refuses first.
  grpc::ClientContext anonymous;
  anonymous.set_deadline(std::chrono::system_clock::now() + 10s);
  auto refused_reader = agent.stub->Watch(&anonymous, watch);
  CHECK_FALSE(refused_reader->Read(&event));
  auto refused = refused_reader->Finish();
  CHECK(refused.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(refused.error_message() == "Agent.Watch refused: no credentials");
}
