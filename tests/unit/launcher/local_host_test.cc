#include "launcher/local_host.h"

#include <unistd.h>

#include <catch2/catch.hpp>

using namespace hvd::launcher;

TEST_CASE("loopback names and addresses are local") {
  LocalIdentity none;
  for (const char* host :
       {"localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1", "0:0::1", "::ffff:127.0.0.1"}) {
    INFO(host);
    CHECK(is_local_host(host, none));
  }
}

TEST_CASE("the host name and its short form and interface addresses are local") {
  LocalIdentity id{"node7.cluster.example", {"10.1.2.3", "fe80::1234%eth0", "2001:db8::5"}};
  CHECK(is_local_host("node7.cluster.example", id));
  CHECK(is_local_host("NODE7.cluster.example", id));
  CHECK(is_local_host("node7", id));
  CHECK(is_local_host("10.1.2.3", id));
  CHECK(is_local_host("fe80::1234", id));
  CHECK(is_local_host("2001:db8:0::5", id));

  CHECK_FALSE(is_local_host("node8", id));
  CHECK_FALSE(is_local_host("node7.other.example", id));
  CHECK_FALSE(is_local_host("cluster", id));
  CHECK_FALSE(is_local_host("10.1.2.4", id));
  CHECK_FALSE(is_local_host("2001:db8::6", id));
  CHECK_FALSE(is_local_host("", id));
}

TEST_CASE("the current identity knows this machine") {
  LocalIdentity id = LocalIdentity::current();
  char name[256] = {};
  REQUIRE(gethostname(name, sizeof(name) - 1) == 0);
  CHECK(id.hostname == name);
  CHECK(is_local_host(name, id));
  for (const auto& address : id.addresses) {
    INFO(address);
    CHECK(is_local_host(address, id));
  }
  CHECK_FALSE(is_local_host("surely-not-this-host.invalid", id));
  CHECK_FALSE(is_local_host("192.0.2.1", id));  // TEST-NET-1, never assigned
}
