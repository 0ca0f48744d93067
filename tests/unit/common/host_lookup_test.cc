#include <netinet/in.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "common/host_lookup.h"
#include "common/route_probe.h"

using namespace hvd::common;

TEST_CASE("resolve_host gives a literal back") {
  auto v4 = resolve_host("127.0.0.1", AF_INET);
  REQUIRE(v4.is_ok());
  REQUIRE(v4->size() == 1);
  CHECK(address_text(v4->front()) == "127.0.0.1");

  auto any = resolve_host("127.0.0.1");
  REQUIRE(any.is_ok());
  CHECK(address_text(any->front()) == "127.0.0.1");

  auto v6 = resolve_host("::1", AF_INET6);
  REQUIRE(v6.is_ok());
  CHECK(address_text(v6->front()) == "::1");
}

TEST_CASE("resolve_host resolves localhost to a loopback address") {
  auto addresses = resolve_host("localhost");
  REQUIRE(addresses.is_ok());
  for (const sockaddr_storage& a : *addresses) {
    const std::string text = address_text(a);
    CHECK((text.rfind("127.", 0) == 0 || text == "::1"));
  }
}

TEST_CASE("resolve_host names the resolver's reason alone when a name does not resolve") {
  auto bad = resolve_host("no-such-host.invalid");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kNotFound);
  CHECK_FALSE(bad.status().message().empty());
  CHECK(bad.status().message().find("no-such-host") == std::string::npos);
  // The callers' messages are built on it.
  CHECK(resolve_problem("no-such-host.invalid").has_value());
  CHECK_FALSE(resolve_problem("localhost").has_value());
}

TEST_CASE("local_listen_address accepts this host's addresses and refuses others") {
  auto loopback = local_listen_address("127.0.0.1");
  REQUIRE(loopback.is_ok());
  CHECK(*loopback == "127.0.0.1");
  auto foreign = local_listen_address("192.0.2.1");  // TEST-NET-1: never local
  REQUIRE_FALSE(foreign.is_ok());
  CHECK_THAT(foreign.status().message(), Catch::Contains("it is not an address of this host"));
  auto bad = local_listen_address("no-such-host.invalid");
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::StartsWith("it does not resolve: "));
}
