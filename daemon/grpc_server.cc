#include "daemon/grpc_server.h"

#include <spdlog/spdlog.h>

namespace hvd::daemon {

namespace {

constexpr int kMaxReceiveBytes = 64 * 1024 * 1024;

// IPv6 literals need brackets in a "host:port" target.
std::string host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

}  // namespace

common::Result<std::unique_ptr<GrpcServer>> GrpcServer::start(
    const std::string& host, int port, const std::vector<grpc::Service*>& services) {
  const std::string requested = host_port(host, port);
  if (host.empty() || port < 0 || port > 65535) {
    return common::unavailable("cannot listen on " + requested + ": invalid address");
  }
  grpc::ServerBuilder builder;
  int selected_port = 0;
  // TLS credentials come with the agent configuration; see DESIGN.md.
  builder.AddListeningPort(requested, grpc::InsecureServerCredentials(), &selected_port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveBytes);
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
