// Bearer-token credentials on gRPC calls. The token travels as
// "authorization: Bearer <token>" metadata; it is never logged.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

namespace hvd::proto {

inline constexpr char kAuthMetadataKey[] = "authorization";

// Adds the token to an outgoing call.
void attach_token(grpc::ClientContext& context, const std::string& token);

// OK when the call carries exactly `expected`; otherwise UNAUTHENTICATED,
// and a warning naming the method and the peer (never the token) is logged.
grpc::Status check_token(const grpc::ServerContext& context, const std::string& expected,
                         const char* method);

}  // namespace hvd::proto
