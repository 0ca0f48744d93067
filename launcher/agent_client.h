// Client of one Agent service: the agent embedded in hvdrun or a remote
// hvd-agent daemon (the same calls). Every call carries an HMAC proof of the
// agent's secret (proto/agent_auth.h) and a deadline. The Watch stream is read
// on a thread of its own that turns its messages into JobEvents on the
// job session's queue. Constructing a client never connects: the channel connects
// on the first call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "hvd/v1/agent.grpc.pb.h"
#include "launcher/job_events.h"

namespace hvd::launcher {

class AgentClient {
 public:
  // `address` is host:port; `secret` the agent's shared secret (never logged
  // or sent). The agent embedded in this process (on 127.0.0.1): plaintext,
  // and no HTTP/2 keepalive (see make_channel in agent_client.cc).
  AgentClient(std::string address, std::string secret);
  // An agent on another host, over `credentials` (proto::channel_credentials:
  // TLS or plaintext), with keepalive.
  AgentClient(std::string address, std::string secret,
              std::shared_ptr<grpc::ChannelCredentials> credentials);
  // Stops the Watch reader.
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  const std::string& address() const { return address_; }

  // Starts the workers. kNotFound / kFailedPrecondition when the command
  // cannot be found / executed (the agent then starts nothing).
  common::Status launch(const hvd::v1::LaunchRequest& request, std::chrono::milliseconds timeout);

  // SIGTERM to every worker process group of the job, SIGKILL after `grace`;
  // returns once they are gone: the number of groups that needed SIGKILL.
  common::Result<int> terminate(const std::string& job_id, std::chrono::milliseconds grace,
                                std::chrono::milliseconds timeout);

  // `ranks` empty: every worker of the job; else only those ranks' workers.
  common::Status signal(const std::string& job_id, int signo, std::chrono::milliseconds timeout,
                        const std::vector<int>& ranks = {});

  // With `wait_for_ready` the call waits (up to `timeout`) for an agent that
  // cannot be reached yet instead of failing at once. Errors carry gRPC's
  // own message (kUnauthenticated: the agent refused the credentials).
  common::Result<hvd::v1::InfoReply> info(std::chrono::milliseconds timeout,
                                          bool wait_for_ready = false);

  // Reads the job's Watch stream on a new thread: WorkerOutput,
  // WorkerStateChanged and WorkerExited events, then exactly one
  // WatchEnded{status, agent}. Call once. While `queue` holds its most
  // output the reader waits, and so does the stream (flow control).
  void start_watch(const std::string& job_id, EventQueue& queue, int agent = 0);

  // Cancels the Watch stream (if still open) and joins its reader (which
  // then no longer waits for room in the queue).
  void stop_watch();

 private:
  void read_watch(std::string job_id, EventQueue* queue, int agent);

  std::string address_;
  std::string secret_;
  std::unique_ptr<hvd::v1::Agent::Stub> stub_;
  std::mutex mu_;
  grpc::ClientContext watch_context_;
  EventQueue* watch_queue_ = nullptr;
  std::atomic<bool> watch_stopping_{false};
  std::thread watch_thread_;
};

}  // namespace hvd::launcher
