#include "launcher/agent_client.h"

#include "common/logging.h"
#include "proto/agent_auth.h"
#include "proto/rpc_status.h"

namespace hvd::launcher {

namespace {

constexpr int kWatchWindowBytes = 1024 * 1024;

void prepare(grpc::ClientContext& context, const std::string& secret, const char* method,
             std::chrono::milliseconds timeout) {
  proto::attach_agent_proof(context, secret, method);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
}

// The Watch stream of an agent whose host vanishes (power loss, cable
// pulled) would otherwise wait forever: HTTP/2 pings notice it within about
// 15 s. That also bounds how stale the agent's word "running" may be
// (launcher/liveness_rule.h). hvd's agents permit pings this often
// (proto/grpc_server.h).
// The agent embedded in hvdrun gets no keepalive at all (nor does its
// server, launcher/host_agents.cc): it is this process, which cannot vanish
// while this process runs, and a ping unanswered because the whole machine
// is starved of CPU (hvdrun -np 1024 on 2 cores: load 400) would end a
// healthy job as "agent lost" (issue 31).
std::shared_ptr<grpc::Channel> make_channel(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    bool keepalive) {
  grpc::ChannelArguments args;
  if (keepalive) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  // A Watch stream's data in flight towards hvdrun is bounded by a fixed
  // receive window (gRPC would grow it to max(4 MiB, twice the bandwidth-
  // delay product) per stream): hvdrun's memory for output is bounded
  // (docs/launcher.md, "Output"). 1 MiB still carries 1 GB/s at 1 ms.
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kWatchWindowBytes);
  // Launch requests carry every worker's environment.
  args.SetMaxSendMessageSize(64 * 1024 * 1024);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  return grpc::CreateCustomChannel(address, credentials, args);
}

}  // namespace

AgentClient::AgentClient(std::string address, std::string secret)
    : address_(std::move(address)),
      secret_(std::move(secret)),
      stub_(hvd::v1::Agent::NewStub(
          make_channel(address_, grpc::InsecureChannelCredentials(), /*keepalive=*/false))) {}

AgentClient::AgentClient(std::string address, std::string secret,
                         std::shared_ptr<grpc::ChannelCredentials> credentials)
    : address_(std::move(address)),
      secret_(std::move(secret)),
      stub_(hvd::v1::Agent::NewStub(make_channel(address_, credentials, /*keepalive=*/true))) {}

AgentClient::~AgentClient() { stop_watch(); }

common::Status AgentClient::launch(const hvd::v1::LaunchRequest& request,
                                   std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  prepare(context, secret_, "Agent.Launch", timeout);
  hvd::v1::LaunchReply reply;
  grpc::Status status = stub_->Launch(&context, request, &reply);
  if (!status.ok()) {
    // The agent's own message as it is: it says which command could not be run.
    return common::Status(proto::from_grpc(status, "Launch").code(), status.error_message());
  }
  for (const auto& started : reply.started()) {
    spdlog::debug("rank {} started as pid {}", started.rank(), started.pid());
  }
  return common::Status::ok();
}

common::Result<int> AgentClient::terminate(const std::string& job_id,
                                           std::chrono::milliseconds grace,
                                           std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  prepare(context, secret_, "Agent.Terminate", timeout);
  hvd::v1::TerminateRequest request;
  request.set_job_id(job_id);
  request.set_grace_ms(grace.count());
  hvd::v1::TerminateReply reply;
  grpc::Status status = stub_->Terminate(&context, request, &reply);
  if (!status.ok()) return proto::from_grpc(status, "agent Terminate at " + address_);
  return reply.killed();
}

common::Status AgentClient::signal(const std::string& job_id, int signo,
                                   std::chrono::milliseconds timeout,
                                   const std::vector<int>& ranks) {
  grpc::ClientContext context;
  prepare(context, secret_, "Agent.Signal", timeout);
  hvd::v1::SignalRequest request;
  request.set_job_id(job_id);
  request.set_signal(signo);
  for (int rank : ranks) request.add_ranks(rank);
  hvd::v1::SignalReply reply;
  return proto::from_grpc(stub_->Signal(&context, request, &reply), "agent Signal at " + address_);
}

common::Result<hvd::v1::InfoReply> AgentClient::info(std::chrono::milliseconds timeout,
                                                      bool wait_for_ready) {
  grpc::ClientContext context;
  prepare(context, secret_, "Agent.Info", timeout);
  context.set_wait_for_ready(wait_for_ready);
  hvd::v1::InfoReply reply;
  grpc::Status status = stub_->Info(&context, hvd::v1::InfoRequest{}, &reply);
  if (!status.ok()) {
    return common::Status(proto::from_grpc(status, "Info").code(), status.error_message());
  }
  return reply;
}

void AgentClient::start_watch(const std::string& job_id, EventQueue& queue, int agent) {
  std::lock_guard<std::mutex> lock(mu_);
  proto::attach_agent_proof(watch_context_, secret_, "Agent.Watch");
  watch_queue_ = &queue;
  watch_thread_ =
      std::thread([this, job_id, q = &queue, agent] { read_watch(job_id, q, agent); });
}

void AgentClient::stop_watch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!watch_thread_.joinable()) return;
  watch_stopping_ = true;
  watch_queue_->wake_output_waiters();
  watch_context_.TryCancel();
  watch_thread_.join();
}

void AgentClient::read_watch(std::string job_id, EventQueue* queue, int agent) {
  common::Status end;
  try {
    hvd::v1::WatchRequest request;
    request.set_job_id(job_id);
    auto reader = stub_->Watch(&watch_context_, request);
    hvd::v1::WatchEvent event;
    while (reader->Read(&event)) {
      if (event.has_output()) {
        auto* out = event.mutable_output();
        WorkerOutput lines{out->rank(), out->stream() == hvd::v1::STDERR, {}};
        lines.lines.reserve(static_cast<size_t>(out->lines_size()));
        for (std::string& line : *out->mutable_lines()) lines.lines.push_back(std::move(line));
        queue->push_output(std::move(lines), watch_stopping_);
      } else if (event.has_exit()) {
        const auto& exit = event.exit();
        queue->push(WorkerExited{exit.rank(), exit.pid(), exit.exit_code(), exit.signal()});
      } else if (event.has_state()) {
        const auto& state = event.state();
        queue->push(WorkerStateChanged{state.rank(), state.pid(),
                                       state.state() == hvd::v1::ProcessState::STOPPED});
      }
    }
    end = proto::from_grpc(reader->Finish(), "agent Watch at " + address_);
  } catch (const std::exception& e) {
    end = common::internal_error(std::string("agent Watch reader failed: ") + e.what());
  }
  queue->push(WatchEnded{end, agent});
}

}  // namespace hvd::launcher
