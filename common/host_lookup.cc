#include "common/host_lookup.h"

#include <netdb.h>
#include <sys/socket.h>

namespace hvd::common {

std::optional<std::string> resolve_problem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  if (error == 0) {
    freeaddrinfo(raw);
    return std::nullopt;
  }
  return std::string(gai_strerror(error));
}

}  // namespace hvd::common
