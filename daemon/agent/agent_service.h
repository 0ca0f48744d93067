// gRPC Agent service: launches and supervises the workers of jobs on this
// host. Every call must carry a proof of the agent secret (UNAUTHENTICATED
// otherwise), checked by the service's call gate on the call's headers,
// before its body is read: serve it with GrpcServer, which installs the
// gate (served otherwise, it refuses every call). Requests over their
// method's limit (kAgentLimits, docs/security.md) get RESOURCE_EXHAUSTED.
// One Supervisor per job; events are queued per job until Watch takes them.
//
// Every method is thread-safe; gRPC may call them concurrently.
// - Launch: INVALID_ARGUMENT (empty job id, no workers, empty argv, a rank
//   twice), ALREADY_EXISTS (job id seen before on this agent), UNAVAILABLE
//   after shutdown(); a worker that cannot be started fails the whole launch
//   with the supervisor's error (NOT_FOUND "cannot execute 'x': command not
//   found") after the workers already started are terminated.
// - Watch: one watcher per job at a time (FAILED_PRECONDITION otherwise).
//   Streams from the job's first event; an event leaves the queue only once
//   written, so a new Watch after a broken one goes on where it stopped.
//   Per worker, its output comes before its exit event. No output is
//   dropped: past a few MiB queued (JobEvents) the workers' pipes are not
//   read until the stream takes them, so a slow watcher (or none yet) makes
//   the workers block in their writes. Ends OK after the
//   last worker's exit event; CANCELLED on client cancel or shutdown().
//   Once a Watch ended OK, processes still left in the job's process groups
//   (children of workers) are killed and the job's resources released; the
//   job stays known (Signal/Terminate are then no-ops, killed = 0).
// - Signal/Terminate/Watch of an unknown job: NOT_FOUND; a malformed job id
//   (empty, longer than 256 bytes, not printable ASCII): INVALID_ARGUMENT.
// - Orphans (AgentOptions::orphan_grace > 0): a job that no Watch has been
//   reading for orphan_grace (none opened since Launch, or the last one ended
//   without the job being over) has lost its launcher: its workers are
//   terminated (SIGTERM, grace, SIGKILL), its undelivered events dropped, and
//   a later Watch ends ABORTED. A Watch opened within the grace keeps it.
//   Once a Watch has been open, a Launch's orphan_grace_ms shorter than
//   orphan_grace is the job's grace instead.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "daemon/agent/agent_metrics.h"
#include "hvd/v1/agent.grpc.pb.h"
#include "proto/call_gate.h"
#include "proto/grpc_server.h"

namespace hvd::daemon {

struct AgentOptions {
  std::string secret;  // shared secret every call must prove (agent_auth.h); empty refuses all
  int slots = 0;       // reported by Info
  // How long a job may go without a Watch before its workers are terminated;
  // 0: never (hvd-agent's default is 30 s).
  std::chrono::milliseconds orphan_grace{0};
};

// The server settings of every Agent server (hvd-agent, the agent embedded
// in hvdrun): at most kAgentStreamsPerConnection calls per connection, each
// with a receive window of kAgentStreamWindowBytes that is never grown, so
// that a connection has at most 100 x 64 KiB = 6.25 MiB in flight towards
// the agent, authenticated or not (docs/security.md, "Work before
// authentication"). A launcher needs a few calls per agent at a time (its
// job's Watch, a Launch, a Signal, Info probes).
inline constexpr int kAgentStreamsPerConnection = 100;
inline constexpr int kAgentStreamWindowBytes = 64 * 1024;
ServerOptions agent_server_options();

class AgentService final : public hvd::v1::Agent::Service, public proto::GatedService {
 public:
  explicit AgentService(AgentOptions options);
  // Terminates every job's workers.
  ~AgentService() override;

  proto::CallGate& call_gate() override;
  // Processes, exits, refused calls and output (hvd-agent --metrics-port).
  const AgentMetrics& metrics() const;

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
  // Launch with `append`: more workers for a running job (elastic replacements).
  grpc::Status append(const grpc::ServerContext& ctx, const hvd::v1::LaunchRequest& req,
                      hvd::v1::LaunchReply* reply);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hvd::daemon
