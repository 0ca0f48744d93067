#include "common/route_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd::common {

Result<sockaddr_storage> source_address_toward(const sockaddr_storage& to) {
  int fd = socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(std::string("socket: ") + std::strerror(errno));
  const socklen_t length = to.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&to), length) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0;
  const int error = errno;
  close(fd);
  if (!ok) return unavailable(std::strerror(error));
  return local;
}

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text,
              sizeof(text));
  } else if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

}  // namespace hvd::common
