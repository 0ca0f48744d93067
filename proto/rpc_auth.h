// Bearer-token credentials on gRPC calls. The token travels as
// "authorization: Bearer <token>" metadata; it is never logged.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::proto {

inline constexpr char kAuthMetadataKey[] = "authorization";

// Adds the token to an outgoing call.
void attach_token(grpc::ClientContext& context, const std::string& token);

// The credential of a "Bearer <credential>" metadata value; nullopt when
// there is no value or it has another scheme.
std::optional<std::string_view> bearer_credential(std::optional<std::string_view> value);

// OK when the "authorization" metadata value (nullopt: none) carries a
// bearer credential that `accepts` takes; otherwise UNAUTHENTICATED, and a
// warning naming the method and the peer (never the credential) is logged.
grpc::Status check_bearer(std::optional<std::string_view> value,
                          const std::function<bool(std::string_view)>& accepts,
                          const std::string& method, std::string_view peer);

// check_bearer() of exactly `expected`.
grpc::Status check_token_value(std::optional<std::string_view> value, const std::string& expected,
                               const std::string& method, std::string_view peer);

}  // namespace hvd::proto
