// Admission of calls on their initial metadata, before gRPC reads a byte of
// their body (issue 21: the agent used to receive and parse unauthenticated
// requests of up to 64 MiB before it checked the proof). A service's gate
// names its methods with the largest request each may send and checks the
// call's credentials (for some methods it may wait: `waiting`);
// GrpcServer::start puts the gates of the services it
// serves in front of them (gated_credentials.h), where gRPC runs them in the
// server's auth filter on the call's headers: a refused call ends there with
// the gate's status, its body is never read into a message, its handler
// never runs, and it holds no server thread.
//
// The handlers then call admitted(): it refuses everything when the gate was
// never installed (the service was served without it) and refuses requests
// over the method's limit with RESOURCE_EXHAUSTED naming the method and the
// limit (the server's receive limit is the largest of them, so only the
// methods with a smaller limit get there).
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace hvd::proto {

class CallGate {
 public:
  // Checks the "authorization" metadata (nullopt when the call has none) of a
  // call of `method` ("Agent.Launch") from `peer` (for log lines: gRPC does
  // not tell the peer's address this early; its TLS identity when it has
  // one); OK admits the call. Called once per call, on a gRPC thread,
  // concurrently: it must be thread-safe and must not block.
  using CredentialCheck =
      std::function<grpc::Status(const std::string& method,
                                 std::optional<std::string_view> authorization,
                                 std::string_view peer)>;

  // `service`: the service's full name (hvd::v1::Agent::service_full_name());
  // `limits`: every method of it ("Launch") with the largest request it takes.
  // `waiting`: the methods whose check may block (a bounded wait, e.g. for
  // the caller's previous call: daemon/rendezvous/set_lanes.h); the server
  // runs their checks on threads of their own, never on gRPC's I/O threads.
  CallGate(std::string service, std::map<std::string, int> limits, CredentialCheck check,
           std::set<std::string, std::less<>> waiting = {});

  const std::string& service() const { return service_; }
  // Whether the check of a call of `path` ("/hvd.v1.Rendezvous/Set") may block.
  bool may_wait(std::string_view path) const;
  bool has_waiting_methods() const { return !waiting_.empty(); }
  // The largest limit of the methods.
  int max_request_bytes() const { return max_request_bytes_; }

  // The gate's verdict on a call of `path` ("/hvd.v1.Agent/Launch", a path
  // of this service): the credential check's status, or UNIMPLEMENTED for a
  // method the gate does not know.
  grpc::Status admit(std::string_view path, std::optional<std::string_view> authorization,
                     std::string_view peer) const;

  // In the handler of `method` ("Launch"): UNAUTHENTICATED when the gate was
  // never installed, RESOURCE_EXHAUSTED when `request` is over the method's
  // limit; OK otherwise.
  grpc::Status admitted(const char* method, const google::protobuf::Message& request) const;

  // GrpcServer::start, once the gate is in front of the service.
  void mark_installed() { installed_.store(true); }
  bool installed() const { return installed_.load(); }

 private:
  const std::string service_;
  const std::string short_name_;  // "Agent": the prefix of the methods' names
  const std::map<std::string, int, std::less<>> limits_;
  const CredentialCheck check_;
  const std::set<std::string, std::less<>> waiting_;
  int max_request_bytes_ = 0;
  std::atomic<bool> installed_{false};
};

// A grpc::Service with a gate; GrpcServer::start installs it.
class GatedService {
 public:
  virtual ~GatedService() = default;
  virtual CallGate& call_gate() = 0;
};

}  // namespace hvd::proto
