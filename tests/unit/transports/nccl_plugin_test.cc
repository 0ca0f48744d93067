// libhvd_nccl.so as the runtime meets it (built only when CMake found CUDA
// and NCCL): it loads as a valid plugin anywhere; on a machine without a
// usable GPU its can_run() refuses with one clear reason, and the CPU
// transports are unaffected. On a GPU machine the refusal checks are
// skipped, saying so (tests/gpu/ runs the collectives there).
#include <catch2/catch.hpp>

#include <vector>

#include "transports/nccl/nccl_hints.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/table/transport_table.h"

namespace hvd::transports::plugin {

TEST_CASE("nccl plugin: loads, and says clearly when it cannot run here", "[plugin][nccl]") {
  auto loaded = LoadedPlugin::load(HVD_NCCL_PLUGIN_PATH);
  REQUIRE(loaded.is_ok());
  CHECK(loaded.value()->name() == "nccl");
  CHECK(loaded.value()->device() == DeviceKind::kCuda);
  CHECK(loaded.value()->abi_version() == HVD_TRANSPORT_PLUGIN_ABI_VERSION);
  // ABI version 4: events, asynchronous errors, copies without
  // classification and the shrink (ncclCommShrink is looked up at run time).
  CHECK(loaded.value()->has_events());
  CHECK(loaded.value()->has_async_error());
  CHECK(loaded.value()->has_shrink());
  CHECK(loaded.value()->api().device_copy_on_device != nullptr);

  Availability here = loaded.value()->can_run();
  if (here.available) {
    WARN("a CUDA device is usable here, not checking the no-GPU refusal");
    return;
  }
  CHECK_THAT(here.reason, Catch::Contains("CUDA device"));
  CHECK_THAT(here.reason, Catch::Contains("cudaGetDeviceCount"));
  CHECK(here.reason.find('\n') == std::string::npos);
}

TEST_CASE("nccl plugin: the registry refuses it with the reason, gloo still works",
          "[plugin][nccl]") {
  TransportRegistry registry = builtin_registry();
  bool listed = false;
  for (const auto& entry : registry.list()) {
    if (entry.name != "nccl") continue;
    listed = true;
    CHECK(entry.device == DeviceKind::kCuda);
    if (entry.availability.available) {
      WARN("a CUDA device is usable here, not checking the no-GPU refusal");
      return;
    }
    CHECK_FALSE(entry.availability.reason.empty());
  }
  CHECK(listed);
  auto refused = registry.create(DeviceKind::kCuda, "nccl", TransportContext{});
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == common::StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.status().message(), Catch::StartsWith("transport 'nccl' cannot run here: "));

  auto gloo = registry.create(DeviceKind::kCpu, "gloo", TransportContext{});
  REQUIRE(gloo.is_ok());
  std::vector<int32_t> data{1, 2, 3};
  CHECK(gloo.value()->allreduce({data.data(), 12}, DataType::kInt32, ReduceOp::kSum).is_ok());
  CHECK(data == std::vector<int32_t>{1, 2, 3});
}

TEST_CASE("nccl plugin: two ranks on one GPU are told what to do instead", "[plugin][nccl]") {
  // NCCL's own words (init.cc) as ncclGetLastError gives them.
  const std::string duplicate =
      "nccl on rank 1 (CUDA device 0): connecting 2 ranks failed: invalid usage: Duplicate GPU "
      "detected : rank 1 and rank 0 both on CUDA device 1a000";
  const std::string hinted = nccl::with_hint(duplicate);
  CHECK_THAT(hinted, Catch::StartsWith(duplicate));
  CHECK_THAT(hinted, Catch::Contains("at most one rank per GPU"));
  CHECK_THAT(hinted, Catch::Contains("HVD_GPU_TRANSPORT=gloo"));
  CHECK(hinted.size() < HVD_PLUGIN_MESSAGE_SIZE);  // the whole of it reaches the user
  CHECK(nccl::with_hint("connecting 2 ranks failed: unhandled system error") ==
        "connecting 2 ranks failed: unhandled system error");
}

}  // namespace hvd::transports::plugin
