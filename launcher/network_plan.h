// Where the job's rendezvous service listens, the address workers dial it
// at, and the address each host's workers bind to (HVD_BIND_ADDRESS). Pure
// logic over the agents' Info replies; network_probe.h finds the inputs.
//
// - Every host local: the rendezvous listens on 127.0.0.1, workers dial and
//   bind 127.0.0.1; --network-interface only has to name an interface the
//   host has (with an IPv4 address), else the kInvalidArgument below.
// - Any host remote: the rendezvous listens on 0.0.0.0 and workers dial the
//   launcher address (the local address the kernel routes toward the first
//   remote agent). Each host's bind address is an IPv4 address of that host:
//   * with --network-interface: the first named interface the host's Info
//     lists with an IPv4 address (none: kInvalidArgument "host h2 has none
//     of the interfaces eth9,ib0 (it has: lo, eth0)");
//   * else, local hosts: the launcher address;
//   * else, remote hosts: the address hvdrun dialed for the host when Info
//     lists it, otherwise the first non-loopback IPv4 address of the host
//     (Info carries no prefix lengths, so subnets cannot be compared);
//     a host without one: kFailedPrecondition.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "hvd/v1/agent.pb.h"

namespace hvd::launcher {

struct HostNetwork {
  std::string host;  // as named in -H (for messages)
  bool local = false;
  // The IPv4 address hvdrun resolved for the host's name (remote hosts;
  // empty when it has none).
  std::string dialed_address;
  hvd::v1::InfoReply info;  // the host's agent's Info
};

struct NetworkPlan {
  std::string listen_host;     // the rendezvous server binds this: 127.0.0.1 or 0.0.0.0
  std::string advertised_host; // workers dial the rendezvous at this address
  std::vector<std::string> bind_addresses;  // one per HostNetwork, same order
};

inline constexpr char kLoopbackAddress[] = "127.0.0.1";
inline constexpr char kAnyAddress[] = "0.0.0.0";

// `launcher_address` is needed (non-empty) only when a host is remote.
common::Result<NetworkPlan> plan_network(const std::vector<HostNetwork>& hosts,
                                         const std::vector<std::string>& interfaces,
                                         const std::string& launcher_address);

// True for a dotted-quad IPv4 address ("10.0.0.2").
bool is_ipv4(const std::string& address);

}  // namespace hvd::launcher
