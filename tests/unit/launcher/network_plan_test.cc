#include "launcher/network_plan.h"

#include <catch2/catch.hpp>

#include "launcher/network_probe.h"

using namespace hvd::launcher;

namespace {

using Interfaces = std::vector<std::pair<std::string, std::vector<std::string>>>;

HostNetwork host(const std::string& name, bool local, const std::string& dialed,
                 const Interfaces& interfaces) {
  HostNetwork h;
  h.host = name;
  h.local = local;
  h.dialed_address = dialed;
  for (const auto& [iface, addresses] : interfaces) {
    auto* out = h.info.add_interfaces();
    out->set_name(iface);
    for (const auto& a : addresses) out->add_addresses(a);
  }
  return h;
}

const Interfaces kH2 = {{"lo", {"127.0.0.1", "::1"}},
                        {"eth0", {"fe80::2", "10.0.0.2"}},
                        {"ib0", {"192.168.5.2"}}};

NetworkPlan plan_ok(const std::vector<HostNetwork>& hosts, const std::vector<std::string>& names,
                    const std::string& launcher) {
  auto p = plan_network(hosts, names, launcher);
  if (!p.is_ok()) FAIL(p.status().to_string());
  return *p;
}

}  // namespace

TEST_CASE("an all-local job stays on loopback") {
  auto p = plan_ok({host("localhost", true, "", kH2)}, {"eth0"}, "");
  CHECK(p.listen_host == "127.0.0.1");
  CHECK(p.advertised_host == "127.0.0.1");
  CHECK(p.bind_addresses == std::vector<std::string>{"127.0.0.1"});
}

TEST_CASE("an all-local job refuses an interface it does not have, naming those it has") {
  auto p = plan_network({host("localhost", true, "", kH2)}, {"eth9"}, "");
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK(p.status().message() ==
        "host localhost has none of the interfaces eth9 (it has: lo, eth0, ib0)");
  // One of the names is enough, as for remote hosts.
  CHECK(plan_ok({host("localhost", true, "", kH2)}, {"eth9", "ib0"}, "").bind_addresses ==
        std::vector<std::string>{"127.0.0.1"});
}

TEST_CASE("remote hosts: rendezvous on 0.0.0.0 at the launcher address") {
  auto p = plan_ok({host("localhost", true, "", {}), host("h2", false, "10.0.0.2", kH2)}, {},
                   "10.0.0.1");
  CHECK(p.listen_host == "0.0.0.0");
  CHECK(p.advertised_host == "10.0.0.1");
  // Local hosts use the launcher address; h2 the address hvdrun dialed.
  CHECK(p.bind_addresses == std::vector<std::string>{"10.0.0.1", "10.0.0.2"});
}

TEST_CASE("the dialed address when the host has it, else its first non-loopback IPv4") {
  auto dialed = plan_ok({host("h2", false, "192.168.5.2", kH2)}, {}, "10.0.0.1");
  CHECK(dialed.bind_addresses == std::vector<std::string>{"192.168.5.2"});
  // Behind NAT or a name that resolves elsewhere: the first usable address.
  auto other = plan_ok({host("h2", false, "172.16.0.9", kH2)}, {}, "10.0.0.1");
  CHECK(other.bind_addresses == std::vector<std::string>{"10.0.0.2"});
  auto unresolved = plan_ok({host("h2", false, "", kH2)}, {}, "10.0.0.1");
  CHECK(unresolved.bind_addresses == std::vector<std::string>{"10.0.0.2"});
}

TEST_CASE("with --network-interface: the first listed interface the host has") {
  const Interfaces h3 = {{"lo", {"127.0.0.1"}}, {"eth0", {"10.0.0.3"}}};
  const Interfaces me = {{"lo", {"127.0.0.1"}}, {"ib0", {"192.168.5.1"}}, {"eth0", {"10.0.0.1"}}};
  auto p = plan_ok({host("localhost", true, "", me), host("h2", false, "10.0.0.2", kH2),
                    host("h3", false, "10.0.0.3", h3)},
                   {"ib0", "eth0"}, "10.0.0.1");
  CHECK(p.advertised_host == "10.0.0.1");
  CHECK(p.bind_addresses == std::vector<std::string>{"192.168.5.1", "192.168.5.2", "10.0.0.3"});
}

TEST_CASE("an interface with only IPv6 addresses does not count") {
  const Interfaces v6 = {{"lo", {"127.0.0.1"}}, {"ib0", {"fe80::1"}}, {"eth0", {"10.0.0.4"}}};
  auto p = plan_ok({host("h4", false, "", v6)}, {"ib0", "eth0"}, "10.0.0.1");
  CHECK(p.bind_addresses == std::vector<std::string>{"10.0.0.4"});
}

TEST_CASE("a host with none of the interfaces is an error naming the host and the names") {
  const Interfaces h2 = {{"lo", {"127.0.0.1"}}, {"eth0", {"10.0.0.2"}}};
  auto p = plan_network({host("localhost", true, "", kH2), host("h2", false, "10.0.0.2", h2)},
                        {"eth9", "ib0"}, "10.0.0.1");
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK(p.status().message() == "host h2 has none of the interfaces eth9,ib0 (it has: lo, eth0)");
}

TEST_CASE("a remote host with only loopback IPv4 cannot host workers") {
  auto p = plan_network({host("h2", false, "10.0.0.2", {{"lo", {"127.0.0.1", "::1"}}})}, {},
                        "10.0.0.1");
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().code() == hvd::common::StatusCode::kFailedPrecondition);
  CHECK_THAT(p.status().message(), Catch::StartsWith("host h2 has no IPv4 address"));
}

TEST_CASE("the launcher address toward 127.0.0.1 is 127.0.0.1") {
  auto source = source_address_toward("127.0.0.1", 29470);
  REQUIRE(source.is_ok());
  CHECK(*source == "127.0.0.1");
  CHECK_FALSE(source_address_toward("not-an-address", 1).is_ok());
}

TEST_CASE("host names resolve to IPv4") {
  auto literal = resolve_ipv4("10.1.2.3");
  REQUIRE(literal.is_ok());
  CHECK(*literal == "10.1.2.3");
  auto localhost = resolve_ipv4("localhost");
  REQUIRE(localhost.is_ok());
  CHECK(localhost->rfind("127.", 0) == 0);
  auto bad = resolve_ipv4("no-such-host.invalid");
  REQUIRE_FALSE(bad.is_ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("no-such-host.invalid"));
  CHECK(is_ipv4("10.0.0.1"));
  CHECK_FALSE(is_ipv4("fe80::1"));
  CHECK_FALSE(is_ipv4("eth0"));
}
