#include <catch2/catch.hpp>

#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {

TEST_CASE("registry: built-ins and unknown names", "[registry]") {
  TransportRegistry registry = builtin_registry();
  CHECK(registry.names(DeviceKind::kCpu) == std::vector<std::string>{"auto", "gloo", "hierarchical", "shm"});
  // nccl is declared whether or not its library exists (loaded on first use).
  CHECK(registry.names(DeviceKind::kCuda) == std::vector<std::string>{"nccl"});

  auto missing = registry.create("mpi", TransportContext{});
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == common::StatusCode::kNotFound);
  CHECK(missing.status().message() == "unknown transport 'mpi' (registered: auto, gloo, hierarchical, nccl, shm)");

  // Asked for a device, only that device's transports count.
  auto cpu_missing = registry.create(DeviceKind::kCpu, "mpi", TransportContext{});
  CHECK(cpu_missing.status().message() ==
        "unknown transport 'mpi' (registered: auto, gloo, hierarchical, shm)");
  auto wrong_device = registry.create(DeviceKind::kCpu, "nccl", TransportContext{});
  CHECK(wrong_device.status().code() == common::StatusCode::kFailedPrecondition);
  CHECK(wrong_device.status().message() ==
        "transport 'nccl' is for cuda tensors, not cpu tensors");
}

TEST_CASE("registry: entries list their device and availability", "[registry]") {
  TransportRegistry registry;
  auto never = [](const TransportContext&) -> Result<std::unique_ptr<Transport>> {
    return common::internal_error("the factory of an unavailable transport was called");
  };
  registry.add("cpu-ok", DeviceKind::kCpu, never);
  registry.add("gpu-no", DeviceKind::kCuda, never,
               [] { return Availability{false, "no CUDA device"}; });
  auto entries = registry.list();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].name == "cpu-ok");
  CHECK(entries[0].device == DeviceKind::kCpu);
  CHECK(entries[0].availability.available);
  CHECK(entries[1].name == "gpu-no");
  CHECK(device_kind_name(entries[1].device) == "cuda");
  CHECK_FALSE(entries[1].availability.available);
  CHECK(entries[1].availability.reason == "no CUDA device");

  auto refused = registry.create("gpu-no", TransportContext{});
  CHECK(refused.status().code() == common::StatusCode::kFailedPrecondition);
  CHECK(refused.status().message() == "transport 'gpu-no' cannot run here: no CUDA device");
}

TEST_CASE("registry: gloo and shm can run anywhere", "[registry]") {
  for (const auto& entry : builtin_registry().list()) {
    if (entry.device != DeviceKind::kCpu) continue;
    INFO(entry.name);
    CHECK(entry.availability.available);
    CHECK(entry.availability.reason.empty());
  }
}

TEST_CASE("registry: a factory's own refusal comes back as is", "[registry]") {
  TransportRegistry registry;
  registry.add("never", DeviceKind::kCuda, [](const TransportContext&) -> Result<std::unique_ptr<Transport>> {
    return common::unavailable("no GPU here");
  });
  CHECK(registry.names(DeviceKind::kCuda) == std::vector<std::string>{"never"});
  auto refused = registry.create("never", TransportContext{});
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().to_string() == "Unavailable: no GPU here");
  CHECK(registry.create("gloo", TransportContext{}).status().message() ==
        "unknown transport 'gloo' (registered: never)");
}

TEST_CASE("registry: gloo refuses a multi-rank world without a store", "[registry]") {
  TransportContext context;
  context.size = 2;
  auto refused = builtin_registry().create("gloo", context);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("needs a rendezvous store"));
}

}  // namespace hvd::transports
