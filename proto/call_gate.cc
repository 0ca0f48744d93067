#include "proto/call_gate.h"

#include <algorithm>
#include <cctype>

namespace hvd::proto {

namespace {

std::string short_name(const std::string& service) {
  const size_t dot = service.rfind('.');
  return dot == std::string::npos ? service : service.substr(dot + 1);
}

}  // namespace

CallGate::CallGate(std::string service, std::map<std::string, int> limits, CredentialCheck check,
                   std::set<std::string, std::less<>> waiting)
    : service_(std::move(service)),
      short_name_(short_name(service_)),
      limits_(limits.begin(), limits.end()),
      check_(std::move(check)),
      waiting_(std::move(waiting)) {
  for (const auto& [method, limit] : limits_) {
    max_request_bytes_ = std::max(max_request_bytes_, limit);
  }
}

bool CallGate::may_wait(std::string_view path) const {
  if (waiting_.empty()) return false;
  const size_t slash = path.rfind('/');
  return waiting_.find(slash == std::string_view::npos ? path : path.substr(slash + 1)) !=
         waiting_.end();
}

grpc::Status CallGate::admit(std::string_view path,
                             std::optional<std::string_view> authorization,
                             std::string_view peer) const {
  // "/<service>/<method>"
  std::string_view method = path;
  const size_t slash = method.rfind('/');
  if (slash != std::string_view::npos) method.remove_prefix(slash + 1);
  // The name goes into log lines: a peer's made-up one only when it looks
  // like a method name.
  const bool plain = method.size() <= 64 && std::all_of(method.begin(), method.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
  const std::string name = short_name_ + "." + (plain ? std::string(method) : "(not a method)");
  // The credentials first: an unauthenticated peer learns nothing, not even
  // which methods exist.
  grpc::Status status = check_(name, authorization, peer);
  if (!status.ok()) return status;
  if (limits_.find(method) == limits_.end()) {
    return {grpc::StatusCode::UNIMPLEMENTED, "no method " + name};
  }
  return grpc::Status::OK;
}

grpc::Status CallGate::admitted(const char* method,
                                const google::protobuf::Message& request) const {
  // The name only for a refusal: admitted() runs on every call.
  auto name = [&] { return short_name_ + "." + method; };
  if (!installed()) {
    return {grpc::StatusCode::UNAUTHENTICATED,
            name() + " refused: the server runs without its credential check"};
  }
  auto it = limits_.find(std::string_view(method));
  const size_t size = request.ByteSizeLong();
  if (it == limits_.end() || size > static_cast<size_t>(it->second)) {
    const int limit = it == limits_.end() ? 0 : it->second;
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            name() + " request of " + std::to_string(size) + " bytes is over the limit of " +
                std::to_string(limit) + " bytes for this method"};
  }
  return grpc::Status::OK;
}

}  // namespace hvd::proto
