#include <net/if.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "common/local_interfaces.h"

using namespace hvd::common;

TEST_CASE("interface_addresses lists the loopback interface's 127.0.0.1, numeric") {
  const auto addresses = interface_addresses();
  REQUIRE_FALSE(addresses.empty());
  bool loopback = false;
  for (const InterfaceAddress& a : addresses) {
    CHECK_FALSE(a.interface.empty());
    CHECK((a.family == AF_INET || a.family == AF_INET6));
    CHECK_FALSE(a.address.empty());
    CHECK(a.address.find('%') == std::string::npos);  // no scope id
    if (a.address == "127.0.0.1") {
      loopback = true;
      CHECK(a.family == AF_INET);
      CHECK((a.flags & IFF_LOOPBACK) != 0);
    }
  }
  CHECK(loopback);
}
