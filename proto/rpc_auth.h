// Bearer-token credentials on gRPC calls. The token travels as
// "authorization: Bearer <token>" metadata; it is never logged.
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <string_view>

namespace hvd::proto {

inline constexpr char kAuthMetadataKey[] = "authorization";

// Adds the token to an outgoing call.
void attach_token(grpc::ClientContext& context, const std::string& token);

// OK when the "authorization" metadata value (nullopt: none) carries
// exactly `expected`; otherwise UNAUTHENTICATED, and a warning naming the
// method and the peer (never the token) is logged. A CallGate (call_gate.h)
// makes this check; `peer` only goes into the log line.
grpc::Status check_token_value(std::optional<std::string_view> value, const std::string& expected,
                               const std::string& method, std::string_view peer);

}  // namespace hvd::proto
