// gRPC writes its own lines to stderr in its own format, e.g.
//   E1128 02:24:08.454528823 6230 ssl_transport_security.cc:1501] Handshake
//   failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong
//   version number.
// route_grpc_log() sends them through spdlog in hvd's format instead (issue
// 29: a failed TLS handshake read as a raw gRPC line): a failed TLS handshake
// as "TLS handshake failed: <OpenSSL's reason> (<what it usually means>)",
// at most one line per 10 s (refusal_log.h), since a peer can fail as many
// handshakes as it likes; gRPC's other errors as warnings ("gRPC: ...").
// gRPC does not tell the peer's address in these lines; the agent's own
// check of client certificates (client_certificates.h) names the certificate.
#pragma once

#include <string>
#include <string_view>

namespace hvd::proto {

// Installs the routing for the whole process (hvdrun, hvd-agent: once, at
// start, after common::init_logging). gRPC hands it only lines at or above
// its verbosity (GRPC_VERBOSITY, default ERROR). Lines logged while the
// process exits go to stderr directly (spdlog may be gone by then).
void route_grpc_log();

// The hvd line for gRPC's `message`, without the prefix spdlog adds:
// "TLS handshake failed: wrong version number (...)" or "gRPC: <message>".
// Bytes outside printable ASCII are escaped.
std::string grpc_log_line(std::string_view message);

// Whether `message` is gRPC's line for a failed TLS handshake.
bool is_handshake_failure(std::string_view message);

}  // namespace hvd::proto
