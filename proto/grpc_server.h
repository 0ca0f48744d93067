// A started gRPC server bound to one address. Port 0 picks a free port.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::daemon {

struct ServerOptions {
  // nullptr: plaintext (grpc::InsecureServerCredentials()).
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Requests larger than this are refused (RESOURCE_EXHAUSTED) before any
  // handler sees them.
  int max_receive_bytes = 64 * 1024 * 1024;
  // Probe idle client connections (HTTP/2 pings) so that a peer that vanished
  // without closing its connection (host down, cable pulled) ends its
  // streams within about keepalive_ms + keepalive_timeout_ms. 0 disables.
  int keepalive_ms = 10'000;
  int keepalive_timeout_ms = 5'000;
};

class GrpcServer {
 public:
  // `host` is an address to bind ("127.0.0.1", "0.0.0.0"); kUnavailable
  // naming the address when it cannot be bound. Services must outlive the server.
  static common::Result<std::unique_ptr<GrpcServer>> start(
      const std::string& host, int port, const std::vector<grpc::Service*>& services,
      const ServerOptions& options = {});

  ~GrpcServer();

  int port() const { return port_; }
  // "host:port" as clients should dial it.
  std::string address() const;

  // Stops accepting calls; in-flight calls get `grace` to finish, then are
  // cancelled; returns once every handler has returned. Idempotent and
  // thread-safe; never call it from inside a handler of this server.
  void shutdown(std::chrono::milliseconds grace);

 private:
  GrpcServer(std::unique_ptr<grpc::Server> server, std::string host, int port);
  std::mutex mu_;  // guards server_ during shutdown
  std::unique_ptr<grpc::Server> server_;
  std::string host_;
  int port_;
};

}  // namespace hvd::daemon
