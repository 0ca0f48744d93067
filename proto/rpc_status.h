// The one place where hvd Status and grpc::Status are mapped onto each other.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace hvd::proto {

grpc::Status to_grpc(const common::Status& status);

// `what` names the call for the message, e.g. "rendezvous Join at 127.0.0.1:4000".
common::Status from_grpc(const grpc::Status& status, const std::string& what);

}  // namespace hvd::proto
