// The transport table (transports/table/transport_table.h): every row is
// consistent, the registry and the settings read it, and "auto" asks its
// rows in order.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "config/settings_table.h"
#include "transports/layout.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {

namespace {

std::string default_of(std::string_view key) {
  const config::SettingSpec* spec = config::find_setting(key);
  REQUIRE(spec != nullptr);
  return std::string(spec->default_value);
}

}  // namespace

TEST_CASE("transport table: every row is built in with a factory or a plugin with a file") {
  std::set<std::string_view> names;
  int staged = 0;
  for (const auto& row : transport_table()) {
    INFO(row.name);
    CHECK(!row.name.empty());
    CHECK(names.insert(row.name).second);  // each name once
    CHECK(row.name != kAutoTransport);
    // Exactly one way to make it.
    CHECK((row.make != nullptr) != !row.plugin_library.empty());
    if (!row.plugin_library.empty()) {
      CHECK(row.plugin_library.find('/') == std::string_view::npos);  // a file name
      CHECK(row.plugin_library.ends_with(".so"));
    }
    // Only built-in CPU rows are "auto" candidates; a layout maker needs a fit.
    if (row.auto_fits != nullptr) CHECK((row.device == DeviceKind::kCpu && row.make != nullptr));
    if (row.make_for_layout != nullptr) CHECK(row.auto_fits != nullptr);
    if (row.stages_cuda) {
      ++staged;
      CHECK((row.device == DeviceKind::kCpu && row.make != nullptr));
    }
    CHECK(!row.auto_help.empty());
    CHECK(find_transport(row.name) == &row);
  }
  CHECK(staged == 1);
  CHECK(find_transport("mpi") == nullptr);
  // "auto" for CUDA tensors: the first CUDA row, a plugin.
  const TransportRow* gpu = find_transport(default_gpu_transport());
  REQUIRE(gpu != nullptr);
  CHECK((gpu->device == DeviceKind::kCuda && !gpu->plugin_library.empty()));
  REQUIRE(find_transport(staged_gpu_transport()) != nullptr);
}

TEST_CASE("transport table: the registry holds every row and auto, each for its device") {
  const TransportRegistry registry = builtin_registry();
  std::set<std::string> want{kAutoTransport};
  for (const auto& row : transport_table()) want.insert(std::string(row.name));
  std::set<std::string> got;
  for (const auto& entry : registry.list()) {
    got.insert(entry.name);
    const TransportRow* row = find_transport(entry.name);
    CHECK(entry.device == (row == nullptr ? DeviceKind::kCpu : row->device));
  }
  CHECK(got == want);
  std::vector<plugin::KnownPlugin> plugins = table_plugins();
  for (const auto& plugin : plugins) {
    const TransportRow* row = find_transport(plugin.name);
    REQUIRE(row != nullptr);
    CHECK((plugin.library == row->plugin_library && plugin.device == row->device));
  }
  // A user's plugin of the same name replaces the table's.
  auto replaced = registry_with_plugins(
      {plugin::KnownPlugin{std::string(default_gpu_transport()), DeviceKind::kCuda, "/nope.so"}});
  CHECK_FALSE(replaced.availability(std::string(default_gpu_transport())).available);
}

TEST_CASE("transport table: the settings' defaults and choices come from it") {
  CHECK(default_of("cpu_transport") == kAutoTransport);
  CHECK(default_of("gpu_transport") == kAutoTransport);
  CHECK(default_of("gpu_staging_plugin") == default_gpu_transport());
  const TransportRegistry registry = builtin_registry();
  std::vector<std::string> gpu = {kAutoTransport, std::string(staged_gpu_transport())};
  for (const auto& name : registry.names(DeviceKind::kCuda)) gpu.push_back(name);
  CHECK(gpu_transport_choices(registry) == gpu);
  CHECK(gpu_transport_choices(registry) == std::vector<std::string>{"auto", "gloo", "nccl"});
  // --help names every row where it may be chosen.
  const std::string cpu_help = setting_choices("cpu_transport");
  const std::string gpu_help = setting_choices("gpu_transport");
  const std::string staging_help = setting_choices("gpu_staging_plugin");
  for (const auto& row : transport_table()) {
    INFO(row.name);
    const std::string name(row.name);
    if (row.device == DeviceKind::kCpu) CHECK(cpu_help.find(name) != std::string::npos);
    if (row.device == DeviceKind::kCuda || row.stages_cuda) {
      CHECK(gpu_help.find(name) != std::string::npos);
    }
    if (row.device == DeviceKind::kCuda) CHECK(staging_help.find(name) != std::string::npos);
  }
  CHECK(cpu_help ==
        ": auto (shm when every rank of a set is on one host, hierarchical when each host has "
        "several, gloo otherwise), shm, hierarchical, gloo");
  CHECK(setting_choices("log_level").empty());
  // hvd.gloo_enabled(): gloo may carry auto's, gloo's and hierarchical's data.
  CHECK(gloo_may_carry(kAutoTransport));
  CHECK(gloo_may_carry("gloo"));
  CHECK(gloo_may_carry("hierarchical"));
  CHECK_FALSE(gloo_may_carry("shm"));
}

TEST_CASE("transport table: auto asks the CPU rows in order, the last fits any layout") {
  std::vector<std::string_view> order;
  AutoFit last;  // the last candidate's, for one rank per host
  for (const auto& row : transport_table()) {
    if (row.auto_fits == nullptr) continue;
    order.push_back(row.name);
    last = row.auto_fits(layout_of({"a", "b", "c"}, 0));
  }
  CHECK(last.fits);
  CHECK(order == std::vector<std::string_view>{"shm", "hierarchical", "gloo"});
  // The first row that fits: shm on one host, hierarchical on equal hosts.
  auto first_fit = [](const Layout& layout) -> std::string_view {
    for (const auto& row : transport_table()) {
      if (row.auto_fits != nullptr && row.auto_fits(layout).fits) return row.name;
    }
    return {};
  };
  CHECK(first_fit(layout_of({"a", "a"}, 1)) == "shm");
  CHECK(first_fit(layout_of({"a", "a", "b", "b"}, 1)) == "hierarchical");
  CHECK(first_fit(layout_of({"a", "a", "b"}, 1)) == "gloo");
  CHECK(first_fit(layout_of({"a", "b"}, 1)) == "gloo");
}

}  // namespace hvd::transports
