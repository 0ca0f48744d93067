// Tells why an address cannot be listened on before gRPC tries (gRPC only
// says that it failed): binds a throw-away socket the way gRPC will.
#pragma once

#include "common/status.h"
#include "daemon/agent/agent_cli.h"

namespace hvd::daemon {

// OK when `address` can be bound now; kUnavailable "cannot listen on
// HOST:PORT: <reason>" otherwise (address in use, not an address of this
// host, unknown host name, permission denied for ports below 1024).
common::Status probe_listen(const ListenAddress& address);

}  // namespace hvd::daemon
