// A started gRPC server bound to one address. Port 0 picks a free port.
// Services that are proto::GatedService get their gate installed in front of
// them (proto/call_gate.h): calls are admitted on their headers, before gRPC
// reads their body.
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
  // handler sees them. 0: the largest request the services' gates allow
  // (4 MiB, gRPC's default, for a server without gates).
  int max_receive_bytes = 0;
  // Probe idle client connections (HTTP/2 pings) so that a peer that vanished
  // without closing its connection (host down, cable pulled) ends its
  // streams within about keepalive_ms + keepalive_timeout_ms. 0 disables.
  int keepalive_ms = 10'000;
  int keepalive_timeout_ms = 5'000;
  // A connection without any call for this long is closed (GOAWAY; a client
  // channel reconnects at its next call). An open stream (Agent.Watch,
  // Rendezvous.Watch) is a call: its connection is never idle. 0: never.
  int max_connection_idle_ms = 60'000;
  // A peer that connects must have sent the HTTP/2 preface (and finished the
  // TLS handshake) within this, or it is disconnected.
  int handshake_timeout_ms = 10'000;
  // Concurrent calls per connection.
  int max_concurrent_streams = 1024;
  // 0: gRPC's receive window per stream (64 KiB at first, grown as BDP
  // probing measures the link). > 0: this window per stream, never grown, so
  // that a connection has at most max_concurrent_streams x this in flight
  // towards the server, whoever sends it (issue 29: unauthenticated 8 MiB
  // bodies, refused on their headers, still arrived in windows grown to
  // megabytes). Large requests then take a round trip per window.
  int stream_window_bytes = 0;
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
