#include "proto/rpc_auth.h"

#include <spdlog/spdlog.h>

#include "common/token.h"
#include "proto/refusal_log.h"

namespace hvd::proto {

namespace {
constexpr std::string_view kBearer = "Bearer ";
}

void attach_token(grpc::ClientContext& context, const std::string& token) {
  context.AddMetadata(kAuthMetadataKey, std::string(kBearer) + token);
}

grpc::Status check_token(const grpc::ServerContext& context, const std::string& expected,
                         const char* method) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthMetadataKey);
  const char* why = "no credentials";
  if (it != metadata.end()) {
    std::string_view value(it->second.data(), it->second.size());
    if (value.substr(0, kBearer.size()) == kBearer &&
        common::tokens_equal(value.substr(kBearer.size()), expected)) {
      return grpc::Status::OK;
    }
    why = "wrong credentials";
  }
  log_refusal(fmt::format("refused {} from {}: {}", method, context.peer(), why));
  return {grpc::StatusCode::UNAUTHENTICATED, std::string(method) + " refused: " + why};
}

}  // namespace hvd::proto
