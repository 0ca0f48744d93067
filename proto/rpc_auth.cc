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

grpc::Status check_token_value(std::optional<std::string_view> value, const std::string& expected,
                               const std::string& method, std::string_view peer) {
  const char* why = "no credentials";
  if (value) {
    if (value->substr(0, kBearer.size()) == kBearer &&
        common::tokens_equal(value->substr(kBearer.size()), expected)) {
      return grpc::Status::OK;
    }
    why = "wrong credentials";
  }
  log_refusal(fmt::format("refused {} from {}: {}", method, peer, why));
  return {grpc::StatusCode::UNAUTHENTICATED, method + " refused: " + why};
}

}  // namespace hvd::proto
