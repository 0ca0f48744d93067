// An Agent service on a real gRPC server on 127.0.0.1, and client helpers
// that attach proofs of the secret, for the Agent tests.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "daemon/agent/agent_service.h"
#include "proto/grpc_server.h"
#include "hvd/v1/agent.grpc.pb.h"

namespace hvd::daemon::test {

inline constexpr char kAgentSecret[] = "agent-secret-for-tests";

struct AgentFixture {
  explicit AgentFixture(AgentOptions options = AgentOptions{kAgentSecret, 4},
                        ServerOptions server_options = {});
  ~AgentFixture();

  AgentService service;
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<hvd::v1::Agent::Stub> stub;
};

// A client context with a proof of `secret` for `method` ("Agent.Launch", ...).
std::unique_ptr<grpc::ClientContext> agent_context(
    const char* method, const std::string& secret = kAgentSecret,
    std::chrono::milliseconds deadline = std::chrono::milliseconds(10'000));

// One worker per argv, ranks from 0, PATH=/usr/bin:/bin.
hvd::v1::LaunchRequest launch_request(const std::string& job_id,
                                      const std::vector<std::vector<std::string>>& argvs);

struct WatchResult {
  grpc::Status status;
  std::vector<hvd::v1::WatchEvent> events;
};

// Reads a whole Watch stream (deadline 10 s).
WatchResult watch_job(hvd::v1::Agent::Stub& stub, const std::string& job_id,
                      const std::string& secret = kAgentSecret);

}  // namespace hvd::daemon::test
