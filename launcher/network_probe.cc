#include "launcher/network_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>

#include "common/route_probe.h"

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
  sockaddr_storage peer{};
  auto* in = reinterpret_cast<sockaddr_in*>(&peer);
  in->sin_family = AF_INET;
  in->sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ipv4.c_str(), &in->sin_addr) != 1) {
    return common::invalid_argument("'" + ipv4 + "' is not an IPv4 address");
  }
  auto local = common::source_address_toward(peer);
  if (!local.is_ok()) {
    return common::unavailable("no route from this host to " + ipv4 + ": " +
                               local.status().message());
  }
  return common::address_text(*local);
}

}  // namespace hvd::launcher
