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

std::optional<std::string_view> bearer_credential(std::optional<std::string_view> value) {
  if (!value || value->substr(0, kBearer.size()) != kBearer) return std::nullopt;
  return value->substr(kBearer.size());
}

grpc::Status check_bearer(std::optional<std::string_view> value,
                          const std::function<bool(std::string_view)>& accepts,
                          const std::string& method, std::string_view peer) {
  const char* why = "no credentials";
  if (value) {
    auto credential = bearer_credential(value);
    if (credential && accepts(*credential)) return grpc::Status::OK;
    why = "wrong credentials";
  }
  log_refusal(fmt::format("refused {} from {}: {}", method, peer, why));
  return {grpc::StatusCode::UNAUTHENTICATED, method + " refused: " + why};
}

grpc::Status check_token_value(std::optional<std::string_view> value, const std::string& expected,
                               const std::string& method, std::string_view peer) {
  return check_bearer(
      value, [&](std::string_view token) { return common::tokens_equal(token, expected); },
      method, peer);
}

}  // namespace hvd::proto
