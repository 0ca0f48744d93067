#include "proto/grpc_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include <grpcpp/impl/codegen/service_type.h>

#include "proto/gated_credentials.h"

namespace hvd::daemon {

namespace {

// IPv6 literals need brackets in a "host:port" target.
std::string host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

}  // namespace

common::Result<std::unique_ptr<GrpcServer>> GrpcServer::start(
    const std::string& host, int port, const std::vector<grpc::Service*>& services,
    const ServerOptions& options) {
  const std::string requested = host_port(host, port);
  if (host.empty() || port < 0 || port > 65535) {
    return common::unavailable("cannot listen on " + requested + ": invalid address");
  }
  std::vector<proto::CallGate*> gates;
  bool all_gated = true;
  int largest_request = 0;
  for (grpc::Service* service : services) {
    if (auto* gated = dynamic_cast<proto::GatedService*>(service)) {
      gates.push_back(&gated->call_gate());
      largest_request = std::max(largest_request, gates.back()->max_request_bytes());
    } else {
      all_gated = false;
    }
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = options.credentials;
  if (!gates.empty()) {
    credentials = proto::gated_credentials(
        std::move(credentials), std::vector<const proto::CallGate*>(gates.begin(), gates.end()),
        all_gated);
  }
  if (!credentials) credentials = grpc::InsecureServerCredentials();
  int max_receive = options.max_receive_bytes;
  if (max_receive <= 0) max_receive = largest_request > 0 ? largest_request : 4 * 1024 * 1024;

  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(requested, credentials, &selected_port);
  builder.SetMaxReceiveMessageSize(max_receive);
  if (options.max_connection_idle_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, options.max_connection_idle_ms);
  }
  if (options.handshake_timeout_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, options.handshake_timeout_ms);
  }
  if (options.max_concurrent_streams > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  }
  if (options.stream_window_bytes > 0) {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.stream_window_bytes);
  }
  if (options.keepalive_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    // Clients (hvdrun) ping as well; do not punish them for it.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1'000);
  }
  // A port another server holds must fail here, not be shared silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || selected_port == 0) {
    if (server) server->Shutdown();
    return common::unavailable("cannot listen on " + requested);
  }
  for (proto::CallGate* gate : gates) gate->mark_installed();
  spdlog::debug("gRPC server listening on {} (largest request {} bytes)",
                host_port(host, selected_port), max_receive);
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(server), host, selected_port));
}

GrpcServer::GrpcServer(std::unique_ptr<grpc::Server> server, std::string host, int port)
    : server_(std::move(server)), host_(std::move(host)), port_(port) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

std::string GrpcServer::address() const { return host_port(host_, port_); }

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  std::lock_guard lock(mu_);
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  server_.reset();
}

}  // namespace hvd::daemon
