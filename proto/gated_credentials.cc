#include "proto/gated_credentials.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

#include "proto/rpc_auth.h"

namespace hvd::proto {

namespace {

// Dispatches each call to the gate of its service. When no gate has methods
// that may wait it never blocks, and gRPC runs it inline in the auth filter.
// Otherwise it is blocking: over TLS gRPC runs every check on a thread of its
// pool; in plaintext (PlaintextWithProcessor) the calls of the methods that
// may wait get a thread of their own, the others are checked inline.
class GateProcessor final : public grpc::AuthMetadataProcessor {
 public:
  GateProcessor(std::vector<const CallGate*> gates, bool refuse_other_services)
      : gates_(std::move(gates)), refuse_other_services_(refuse_other_services) {
    for (const CallGate* gate : gates_) blocking_ = blocking_ || gate->has_waiting_methods();
  }

  bool IsBlocking() const override { return blocking_; }

  // Whether the check of a call of `path` may block.
  bool may_wait(std::string_view path) const {
    for (const CallGate* gate : gates_) {
      if (gate->may_wait(path)) return true;
    }
    return false;
  }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) override {
    std::string_view path;
    std::optional<std::string_view> authorization;
    for (const auto& [key, value] : metadata) {
      const std::string_view k(key.data(), key.size());
      if (k == ":path") path = std::string_view(value.data(), value.size());
      if (k == kAuthMetadataKey) authorization = std::string_view(value.data(), value.size());
    }
    // "/<service>/<method>"
    std::string_view service = path.substr(path.empty() ? 0 : 1);
    service = service.substr(0, service.find('/'));
    for (const CallGate* gate : gates_) {
      if (gate->service() == service) return gate->admit(path, authorization, peer_of(context));
    }
    if (!refuse_other_services_) return grpc::Status::OK;
    return {grpc::StatusCode::UNIMPLEMENTED, "no service " + std::string(service)};
  }

 private:
  // The TLS identity of the peer; gRPC does not give its address here.
  static std::string peer_of(const grpc::AuthContext* context) {
    std::string peer;
    if (context != nullptr && context->IsPeerAuthenticated()) {
      for (const auto& name : context->GetPeerIdentity()) {
        peer.append(peer.empty() ? "" : ",").append(name.data(), name.size());
      }
    }
    return peer.empty() ? "unidentified" : "tls:" + peer;
  }

  const std::vector<const CallGate*> gates_;
  const bool refuse_other_services_;
  bool blocking_ = false;
};

// Plaintext with a metadata processor, through gRPC's core API (the C++
// InsecureServerCredentials() asserts in SetAuthMetadataProcessor).
class PlaintextWithProcessor final : public grpc::ServerCredentials {
 public:
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& processor) override {
    processor_ = processor;
  }

 private:
  using Shared = std::shared_ptr<grpc::AuthMetadataProcessor>;

  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    grpc_server_credentials* creds = grpc_insecure_server_credentials_create();
    if (processor_) {
      grpc_server_credentials_set_auth_metadata_processor(
          creds, {&PlaintextWithProcessor::process, &PlaintextWithProcessor::destroy,
                  new Shared(processor_)});
    }
    const int port = grpc_server_add_http2_port(server, addr.c_str(), creds);
    grpc_server_credentials_release(creds);
    return port;
  }

  static std::string_view text(const grpc_slice& slice) {
    return {reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slice)), GRPC_SLICE_LENGTH(slice)};
  }

  static void process(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md,
                      size_t num_md, grpc_process_auth_metadata_done_cb done, void* user_data) {
    // Owned copies: a check that may wait runs after this returns.
    auto headers = std::make_shared<std::vector<std::pair<std::string, std::string>>>();
    bool wait = false;
    const Shared& processor = *static_cast<Shared*>(state);
    const auto* gate = dynamic_cast<const GateProcessor*>(processor.get());
    for (size_t i = 0; i < num_md; ++i) {
      headers->emplace_back(text(md[i].key), text(md[i].value));
      if (gate != nullptr && headers->back().first == ":path") {
        wait = gate->may_wait(headers->back().second);
      }
    }
    auto check = [processor, headers, done, user_data] {
      grpc::AuthMetadataProcessor::InputMetadata input;
      for (const auto& [key, value] : *headers) input.emplace(key, value);
      grpc::AuthMetadataProcessor::OutputMetadata consumed;
      grpc::AuthMetadataProcessor::OutputMetadata response;
      const grpc::Status status = processor->Process(input, nullptr, &consumed, &response);
      done(user_data, nullptr, 0, nullptr, 0, static_cast<grpc_status_code>(status.error_code()),
           status.ok() ? nullptr : status.error_message().c_str());
    };
    if (wait) {
      std::thread(std::move(check)).detach();
    } else {
      check();
    }
  }

  static void destroy(void* state) { delete static_cast<Shared*>(state); }

  Shared processor_;
};

bool is_plaintext(const std::shared_ptr<grpc::ServerCredentials>& creds) {
  if (!creds) return true;
  static const std::shared_ptr<grpc::ServerCredentials> insecure =
      grpc::InsecureServerCredentials();
  return typeid(*creds) == typeid(*insecure);
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> gated_credentials(
    std::shared_ptr<grpc::ServerCredentials> base, std::vector<const CallGate*> gates,
    bool refuse_other_services) {
  auto processor = std::make_shared<GateProcessor>(std::move(gates), refuse_other_services);
  std::shared_ptr<grpc::ServerCredentials> creds =
      is_plaintext(base) ? std::make_shared<PlaintextWithProcessor>() : std::move(base);
  creds->SetAuthMetadataProcessor(processor);
  return creds;
}

}  // namespace hvd::proto
