#include "launcher/network_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/host_lookup.h"
#include "common/route_probe.h"

namespace hvd::launcher {

common::Result<std::string> resolve_ipv4(const std::string& host) {
  auto addresses = common::resolve_host(host, AF_INET);
  if (!addresses.is_ok()) {
    return common::not_found("cannot resolve host " + host + " to an IPv4 address: " +
                             addresses.status().message());
  }
  return common::address_text(addresses->front());
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
