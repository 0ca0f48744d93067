#include "proto/grpc_server.h"

#include <spdlog/spdlog.h>

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
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(
      requested, options.credentials ? options.credentials : grpc::InsecureServerCredentials(),
      &selected_port);
  builder.SetMaxReceiveMessageSize(options.max_receive_bytes);
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
  spdlog::debug("gRPC server listening on {}", host_port(host, selected_port));
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
