// gRPC Agent service: launches and supervises the workers of jobs on this
// host. Every call must carry the agent secret (UNAUTHENTICATED otherwise).
// One Supervisor per job; events are queued per job until Watch takes them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "hvd/v1/agent.grpc.pb.h"

namespace hvd::daemon {

struct AgentOptions {
  std::string secret;   // bearer token every call must carry
  int slots = 0;        // reported by Info
};

class AgentService final : public hvd::v1::Agent::Service {
 public:
  explicit AgentService(AgentOptions options);
  // Terminates every job's workers.
  ~AgentService() override;

  // Terminates every job (SIGTERM, grace, SIGKILL) and ends Watch streams.
  void shutdown(std::chrono::milliseconds grace);

  grpc::Status Launch(grpc::ServerContext* ctx, const hvd::v1::LaunchRequest* req,
                      hvd::v1::LaunchReply* reply) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const hvd::v1::WatchRequest* req,
                     grpc::ServerWriter<hvd::v1::WatchEvent>* writer) override;
  grpc::Status Signal(grpc::ServerContext* ctx, const hvd::v1::SignalRequest* req,
                      hvd::v1::SignalReply* reply) override;
  grpc::Status Terminate(grpc::ServerContext* ctx, const hvd::v1::TerminateRequest* req,
                         hvd::v1::TerminateReply* reply) override;
  grpc::Status Info(grpc::ServerContext* ctx, const hvd::v1::InfoRequest* req,
                    hvd::v1::InfoReply* reply) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hvd::daemon
