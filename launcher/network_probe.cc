#include "launcher/network_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace hvd::launcher {

common::Result<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0 || list == nullptr) {
    return common::not_found("cannot resolve host " + host + " to an IPv4 address: " +
                             (rc != 0 ? gai_strerror(rc) : "no address"));
  }
  std::array<char, INET_ADDRSTRLEN> text{};
  const auto* address = reinterpret_cast<const sockaddr_in*>(list->ai_addr);
  inet_ntop(AF_INET, &address->sin_addr, text.data(), text.size());
  freeaddrinfo(list);
  return std::string(text.data());
}

common::Result<std::string> source_address_toward(const std::string& ipv4, int port) {
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ipv4.c_str(), &peer.sin_addr) != 1) {
    return common::invalid_argument("'" + ipv4 + "' is not an IPv4 address");
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return common::unavailable(std::string("socket: ") + std::strerror(errno));
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof(peer)) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  int error = errno;
  close(fd);
  if (!ok) {
    return common::unavailable("no route from this host to " + ipv4 + ": " +
                               std::strerror(error));
  }
  std::array<char, INET_ADDRSTRLEN> text{};
  inet_ntop(AF_INET, &local.sin_addr, text.data(), text.size());
  return std::string(text.data());
}

}  // namespace hvd::launcher
