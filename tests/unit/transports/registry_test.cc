#include <catch2/catch.hpp>

#include "transports/registry.h"

namespace hvd::transports {

TEST_CASE("registry: built-ins and unknown names", "[registry]") {
  TransportRegistry registry = TransportRegistry::with_builtins();
  CHECK(registry.names(DeviceKind::kCpu) == std::vector<std::string>{"auto", "gloo", "hierarchical", "shm"});
  CHECK(registry.names(DeviceKind::kCuda).empty());

  auto missing = registry.create("mpi", TransportContext{});
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == common::StatusCode::kNotFound);
  CHECK(missing.status().message() == "unknown transport 'mpi' (registered: auto, gloo, hierarchical, shm)");
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
  auto refused = TransportRegistry::with_builtins().create("gloo", context);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("needs a rendezvous store"));
}

}  // namespace hvd::transports
