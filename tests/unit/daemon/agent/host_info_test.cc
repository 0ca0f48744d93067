#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/agent/host_info.h"

TEST_CASE("count_gpus counts /dev/nvidia<N> device files only") {
  char tmpl[] = "/tmp/hvd-dev-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvme0"}) {
    std::ofstream(dir + "/" + name) << "";
  }
  CHECK(hvd::daemon::count_gpus(dir) == 3);
  CHECK(hvd::daemon::count_gpus(dir + "/absent") == 0);
  // Slots default to the GPUs when there are any, else to the online CPUs.
  CHECK(hvd::daemon::default_slots(dir) == 3);
  CHECK(hvd::daemon::default_slots(dir + "/absent") == ::sysconf(_SC_NPROCESSORS_ONLN));
  std::filesystem::remove_all(dir);
}

TEST_CASE("host_name and network_interfaces describe this host") {
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof(host) - 1) == 0);
  CHECK(hvd::daemon::host_name() == host);
  bool loopback = false;
  for (const auto& iface : hvd::daemon::network_interfaces()) {
    CHECK_FALSE(iface.name.empty());
    CHECK_FALSE(iface.addresses.empty());
    for (const auto& a : iface.addresses) loopback = loopback || a == "127.0.0.1";
  }
  CHECK(loopback);
}
