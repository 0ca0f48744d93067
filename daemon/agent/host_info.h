// Facts about this host that the Agent reports in Info. Private to daemon/.
#pragma once

#include <string>
#include <vector>

namespace hvd::daemon {

struct InterfaceAddresses {
  std::string name;
  std::vector<std::string> addresses;  // IPv4 and IPv6, as text
};

// gethostname(); "localhost" when it fails.
std::string host_name();

// Number of /dev/nvidia<N> device files under `dev_dir`.
int count_gpus(const std::string& dev_dir = "/dev");

// Slots of this host when nobody says: the number of GPUs (count_gpus) when
// there are any, else the number of online CPUs (at least 1).
int default_slots(const std::string& dev_dir = "/dev");

// Every interface with an IPv4 or IPv6 address, in the order getifaddrs
// lists them, each address once.
std::vector<InterfaceAddresses> network_interfaces();

}  // namespace hvd::daemon
