// The gpu_transport setting (runtime/gpu_transport.h) against a registry:
// bad names refused at once naming them, auto and gloo never falling back
// silently, a transport that cannot run here saying why.
#include <catch2/catch.hpp>

#include <string>

#include "runtime/gpu_transport.h"
#include "tests/unit/runtime/host_device_work.h"

namespace hvd::runtime {

namespace {

using transports::Availability;
using transports::DeviceKind;
using transports::TransportContext;
using transports::TransportRegistry;

using TransportMade = common::Result<std::unique_ptr<transports::Transport>>;

// Devices the registry's nccl entry opened device work for.
struct Opened {
  std::vector<int> devices;
};

// "nccl" (CUDA, with device work unless `device_work` is false; its factory
// fails naming the device it got), "gloo" and "auto" (CPU; likewise),
// "cpuonly".
TransportRegistry registry_with_gpu(bool can_run, Opened* opened = nullptr,
                                    bool device_work = true) {
  TransportRegistry registry;
  registry.add("cpuonly", DeviceKind::kCpu, [](const TransportContext&) {
    return TransportMade(common::internal_error("no"));
  });
  registry.add("gloo", DeviceKind::kCpu, [](const TransportContext& c) {
    return TransportMade(common::internal_error("gloo made for device " + std::to_string(c.device)));
  });
  registry.add("auto", DeviceKind::kCpu, [](const TransportContext& c) {
    return TransportMade(common::internal_error("auto made for device " + std::to_string(c.device)));
  });
  transports::DeviceWorkOpener open;
  if (device_work) {
    open = [opened](int device, std::chrono::milliseconds)
        -> common::Result<std::unique_ptr<transports::DeviceWork>> {
      if (opened != nullptr) opened->devices.push_back(device);
      return std::unique_ptr<transports::DeviceWork>(new testing::HostDeviceWork(device));
    };
  }
  registry.add(
      "nccl", DeviceKind::kCuda,
      [](const TransportContext& c) {
        return TransportMade(common::internal_error("made for device " + std::to_string(c.device)));
      },
      [can_run] { return Availability{can_run, can_run ? "" : "no CUDA device (test)"}; },
      open);
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
  CHECK(staged.status().message() ==
        "HVD_GPU_TRANSPORT=gloo cannot run here: staging needs the device functions of 'nccl' "
        "(HVD_GPU_STAGING_PLUGIN): no CUDA device (test)");
}

TEST_CASE("gpu transport: a transport that can run is created with the context",
          "[gpu_transport]") {
  auto registry = registry_with_gpu(true);
  TransportContext context;
  context.device = 3;
  Opened opened;
  registry = registry_with_gpu(true, &opened);
  auto made = GpuTransportChoice::parse("auto", registry).value().connect(registry, context);
  REQUIRE_FALSE(made.is_ok());  // the test factory fails, naming the device it got
  CHECK(made.status().message() == "HVD_GPU_TRANSPORT=auto: made for device 3");
  CHECK(opened.devices == std::vector<int>{3});  // the device work first, for that device
}

TEST_CASE("gpu transport: without device work, device ops cannot run", "[gpu_transport]") {
  auto registry = registry_with_gpu(true, nullptr, false);
  TransportContext context;
  auto made = GpuTransportChoice::parse("nccl", registry).value().connect(registry, context);
  REQUIRE_FALSE(made.is_ok());
  CHECK(made.status().message() ==
        "HVD_GPU_TRANSPORT=nccl: transport 'nccl' has no device functions");
}

TEST_CASE("gpu transport: gloo stages through the staging plugin's device work",
          "[gpu_transport]") {
  Opened opened;
  auto registry = registry_with_gpu(true, &opened);
  TransportContext context;
  context.device = 2;
  auto made = GpuTransportChoice::parse("gloo", registry).value().connect(registry, context);
  // Staged to the CPU transport "auto" chooses (shm on one host, ...): its
  // factory fails here, naming the device of its context.
  REQUIRE_FALSE(made.is_ok());
  CHECK(made.status().message() == "HVD_GPU_TRANSPORT=gloo: auto made for device 2");
  CHECK(opened.devices == std::vector<int>{2});
  auto bad = GpuTransportChoice::parse("gloo", registry, "cpuonly");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() ==
        "HVD_GPU_STAGING_PLUGIN (gpu_staging_plugin) 'cpuonly' is not a CUDA transport plugin; "
        "choose one of: nccl");
}

}  // namespace hvd::runtime
