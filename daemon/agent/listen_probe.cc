#include "daemon/agent/listen_probe.h"

#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hvd::daemon {

common::Status probe_listen(const ListenAddress& address) {
  const std::string where = "cannot listen on " + to_string(address);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return common::unavailable(where + ": " + ::gai_strerror(rc));
  int err = 0;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const bool bound = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    if (!bound) err = errno;
    ::close(fd);
    if (bound) {
      ::freeaddrinfo(found);
      return common::Status::ok();
    }
  }
  ::freeaddrinfo(found);
  const char* why = ::strerrordesc_np(err);
  return common::unavailable(where + ": " + (why ? why : "error"));
}

}  // namespace hvd::daemon
