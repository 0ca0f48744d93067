// The gpu_transport setting (runtime/gpu_transport.h) against a registry:
// bad names refused at once naming them, auto and gloo never falling back
// silently, a transport that cannot run here saying why.
#include <catch2/catch.hpp>

#include <string>

#include "runtime/gpu_transport.h"

namespace hvd::runtime {

namespace {

using transports::Availability;
using transports::DeviceKind;
using transports::TransportContext;
using transports::TransportRegistry;

TransportRegistry registry_with_gpu(bool can_run) {
  TransportRegistry registry;
  registry.add("cpuonly", DeviceKind::kCpu, [](const TransportContext&) {
    return common::Result<std::unique_ptr<transports::Transport>>(common::internal_error("no"));
  });
  registry.add(
      "nccl", DeviceKind::kCuda,
      [](const TransportContext& c) {
        return common::Result<std::unique_ptr<transports::Transport>>(
            common::internal_error("made for device " + std::to_string(c.device)));
      },
      [can_run] { return Availability{can_run, can_run ? "" : "no CUDA device (test)"}; });
  return registry;
}

}  // namespace

TEST_CASE("gpu transport: names that are no CUDA transport are refused naming them",
          "[gpu_transport]") {
  auto registry = registry_with_gpu(true);
  for (const char* good : {"auto", "gloo", "nccl"}) {
    CHECK(GpuTransportChoice::parse(good, registry).is_ok());
  }
  for (const char* bad : {"bogus", "cpuonly", ""}) {
    auto r = GpuTransportChoice::parse(bad, registry);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == common::StatusCode::kInvalidArgument);
    CHECK(r.status().message() == "HVD_GPU_TRANSPORT (gpu_transport) '" + std::string(bad) +
                                      "' is not a transport for CUDA tensors; choose one of: "
                                      "auto, gloo, nccl");
  }
}

TEST_CASE("gpu transport: auto and named transports say why they cannot run",
          "[gpu_transport]") {
  auto registry = registry_with_gpu(false);
  TransportContext context;
  auto by_auto = GpuTransportChoice::parse("auto", registry).value().connect(registry, context);
  REQUIRE_FALSE(by_auto.is_ok());
  CHECK(by_auto.status().message() ==
        "HVD_GPU_TRANSPORT=auto cannot run here: nccl: no CUDA device (test)");
  auto named = GpuTransportChoice::parse("nccl", registry).value().connect(registry, context);
  REQUIRE_FALSE(named.is_ok());
  CHECK(named.status().code() == common::StatusCode::kFailedPrecondition);
  CHECK(named.status().message() ==
        "HVD_GPU_TRANSPORT=nccl cannot run here: no CUDA device (test)");
  auto staged = GpuTransportChoice::parse("gloo", registry).value().connect(registry, context);
  REQUIRE_FALSE(staged.is_ok());
  CHECK_THAT(staged.status().message(),
             Catch::StartsWith("HVD_GPU_TRANSPORT=gloo cannot run here: staging CUDA tensors"));
}

TEST_CASE("gpu transport: a transport that can run is created with the context",
          "[gpu_transport]") {
  auto registry = registry_with_gpu(true);
  TransportContext context;
  context.device = 3;
  auto made = GpuTransportChoice::parse("auto", registry).value().connect(registry, context);
  REQUIRE_FALSE(made.is_ok());  // the test factory fails, naming the device it got
  CHECK(made.status().message() == "HVD_GPU_TRANSPORT=auto: made for device 3");
}

}  // namespace hvd::runtime
