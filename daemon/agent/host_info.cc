#include "daemon/agent/host_info.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "common/local_interfaces.h"

namespace hvd::daemon {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

int count_gpus(const std::string& dev_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dev_dir, ec);
  int gpus = 0;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    constexpr std::string_view kPrefix = "nvidia";
    if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    const bool digits = std::all_of(name.begin() + kPrefix.size(), name.end(),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
    if (digits) ++gpus;
  }
  return gpus;
}

int default_slots(const std::string& dev_dir) {
  const int gpus = count_gpus(dev_dir);
  if (gpus > 0) return gpus;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? static_cast<int>(cpus) : 1;
}

std::vector<InterfaceAddresses> network_interfaces() {
  std::vector<InterfaceAddresses> out;
  for (const common::InterfaceAddress& a : common::interface_addresses()) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const InterfaceAddresses& i) { return i.name == a.interface; });
    if (it == out.end()) {
      out.push_back({a.interface, {}});
      it = out.end() - 1;
    }
    if (std::find(it->addresses.begin(), it->addresses.end(), a.address) == it->addresses.end()) {
      it->addresses.push_back(a.address);
    }
  }
  return out;
}

}  // namespace hvd::daemon
