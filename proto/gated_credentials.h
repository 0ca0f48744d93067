// Server credentials that run CallGates (call_gate.h) on every call's
// initial metadata, in gRPC's server auth filter: a refused call fails
// there, before its body is read and before any handler or server thread is
// given to it. Works for plaintext and for TLS credentials alike: gRPC's own
// InsecureServerCredentials() cannot take a metadata processor (its
// SetAuthMetadataProcessor aborts), so plaintext is served through gRPC's
// core insecure credentials with the processor set on them directly.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <vector>

#include "proto/call_gate.h"

namespace hvd::proto {

// `base`: nullptr or grpc::InsecureServerCredentials() for plaintext, or TLS
// credentials (then these very credentials get the gates: the last call
// wins). A call goes to the gate of its service; a call of a service with
// no gate is refused (UNIMPLEMENTED) when `refuse_other_services`, let
// through otherwise. The gates must outlive every server using the result.
std::shared_ptr<grpc::ServerCredentials> gated_credentials(
    std::shared_ptr<grpc::ServerCredentials> base, std::vector<const CallGate*> gates,
    bool refuse_other_services);

}  // namespace hvd::proto
