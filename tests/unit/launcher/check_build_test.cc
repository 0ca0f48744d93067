// hvdrun --check-build: the report (over a registry the test builds) and the
// flag (exit 0, no command needed).
#include <catch2/catch.hpp>

#include <variant>

#include "launcher/check_build.h"
#include "launcher/cli.h"
#include "transports/plugin/transport_plugin.h"

namespace hvd::launcher {

TEST_CASE("check-build: transports with their device and availability") {
  transports::TransportRegistry registry;
  auto never = [](const transports::TransportContext&)
      -> common::Result<std::unique_ptr<transports::Transport>> {
    return common::internal_error("not created in this test");
  };
  registry.add("cpu-one", transports::DeviceKind::kCpu, never);
  registry.add("gpu-one", transports::DeviceKind::kCuda, never, [] {
    return transports::Availability{false, "no CUDA device"};
  });
  std::string report = check_build_report(registry, "9.8.7");
  CHECK_THAT(report, Catch::StartsWith("hvd v9.8.7:\n"));
  CHECK_THAT(report, Catch::Contains("transport plugin ABI version " +
                                     std::to_string(HVD_TRANSPORT_PLUGIN_ABI_VERSION)));
  CHECK_THAT(report, Catch::Contains("\n    [X] cpu-one (cpu)\n"));
  CHECK_THAT(report,
             Catch::Contains("\n    [ ] gpu-one (cuda): cannot run here: no CUDA device\n"));
  CHECK_THAT(report, Catch::Contains("Transport plugins:\n    [") &&
                         Catch::Contains("libhvd_nccl.so (nccl): "));
  CHECK_THAT(report, Catch::Contains("[X] elastic training") && Catch::Contains("[X] timeline"));
}

TEST_CASE("check-build: the flag prints the report and exits 0 without a command") {
  CliOutcome outcome =
      parse_command_line({"--check-build"}, [](const char*) -> const char* { return nullptr; });
  auto* done = std::get_if<CliExit>(&outcome);
  REQUIRE(done != nullptr);
  CHECK(done->code == 0);
  CHECK(done->err.empty());
  CHECK_THAT(done->out, Catch::StartsWith("hvd v") &&
                            Catch::Contains("[X] gloo (cpu)\n") &&
                            Catch::Contains("[X] shm (cpu)\n") && Catch::Contains("nccl (cuda)"));
}

}  // namespace hvd::launcher
