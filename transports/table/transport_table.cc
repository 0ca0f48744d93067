#include "transports/table/transport_table.h"

#include <array>
#include <utility>

#include "transports/gloo/factory.h"
#include "transports/hierarchical/factory.h"
#include "transports/shm/factory.h"

namespace hvd::transports {

namespace {

// "auto" picks shm when every rank is on one host: its local size is then
// the world's, known.
AutoFit shm_fits(const Layout& layout) {
  return {layout.host_count == 1, layout.host_count == 1
                                      ? "every rank on one host"
                                      : "ranks on " + std::to_string(layout.host_count) + " hosts"};
}
Result<std::unique_ptr<Transport>> shm_for_layout(const TransportContext& context,
                                                  const Layout& layout) {
  TransportContext local = context;
  local.local_size = layout.local_size;
  return shm::create(local);
}

AutoFit hierarchical_fits(const Layout& layout) {
  hierarchical::Choice choice = hierarchical::choose(layout);
  return {choice.hierarchical, std::move(choice.why)};
}
Result<std::unique_ptr<Transport>> hierarchical_make(const TransportContext& context) {
  return hierarchical::create(context);
}

AutoFit any_layout(const Layout&) { return {true, ""}; }

// The table. Adding a transport: a row here, its folder under transports/
// (its sources in transports/CMakeLists.txt; a plugin its own library), a
// line in docs/transports.md.
constexpr std::array kTable = {
    TransportRow{.name = shm::kName,
                 .device = DeviceKind::kCpu,
                 .make = &shm::create,
                 .auto_fits = &shm_fits,
                 .make_for_layout = &shm_for_layout,
                 .auto_help = "when every rank of a set is on one host"},
    TransportRow{.name = hierarchical::kName,
                 .device = DeviceKind::kCpu,
                 .make = &hierarchical_make,
                 .auto_fits = &hierarchical_fits,
                 .make_for_layout = &hierarchical::create,
                 .uses_gloo = true,
                 .auto_help = "when each host has several"},
    TransportRow{.name = gloo::kName,
                 .device = DeviceKind::kCpu,
                 .make = &gloo::create,
                 .auto_fits = &any_layout,
                 .stages_cuda = true,
                 .uses_gloo = true,
                 .auto_help = "otherwise"},
    TransportRow{.name = "nccl",
                 .device = DeviceKind::kCuda,
                 .plugin_library = "libhvd_nccl.so",
                 .auto_help = "when it can run here, else device ops fail saying why"},
};

std::vector<AutoCandidate> auto_candidates() {
  std::vector<AutoCandidate> out;
  for (const auto& row : kTable) {
    if (row.device != DeviceKind::kCpu || row.auto_fits == nullptr) continue;
    out.push_back(AutoCandidate{row.name, row.auto_fits, row.make_for_layout, row.make});
  }
  return out;
}

Result<std::unique_ptr<Transport>> create_auto_from_table(const TransportContext& context) {
  static const std::vector<AutoCandidate> candidates = auto_candidates();
  return create_auto(context, candidates);
}

plugin::KnownPlugin as_plugin(const TransportRow& row) {
  return plugin::KnownPlugin{std::string(row.name), row.device, std::string(row.plugin_library)};
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::span<const TransportRow> transport_table() { return kTable; }

const TransportRow* find_transport(std::string_view name) {
  for (const auto& row : kTable) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

TransportRegistry builtin_registry() {
  TransportRegistry registry;
  for (const auto& row : kTable) {
    if (row.make != nullptr) {
      registry.add(std::string(row.name), row.device, row.make);
    } else {
      plugin::register_plugin(registry, as_plugin(row));
    }
  }
  registry.add(kAutoTransport, DeviceKind::kCpu, &create_auto_from_table);
  return registry;
}

TransportRegistry registry_with_plugins(const std::vector<plugin::KnownPlugin>& plugins) {
  auto registry = builtin_registry();
  for (const auto& plugin : plugins) plugin::register_plugin(registry, plugin);
  return registry;
}

std::vector<plugin::KnownPlugin> table_plugins() {
  std::vector<plugin::KnownPlugin> out;
  for (const auto& row : kTable) {
    if (row.make == nullptr) out.push_back(as_plugin(row));
  }
  return out;
}

std::string_view default_gpu_transport() {
  for (const auto& row : kTable) {
    if (row.device == DeviceKind::kCuda) return row.name;
  }
  return {};
}

std::string_view staged_gpu_transport() {
  for (const auto& row : kTable) {
    if (row.stages_cuda) return row.name;
  }
  return {};
}

std::vector<std::string> gpu_transport_choices(const TransportRegistry& registry) {
  std::vector<std::string> out = {kAutoTransport, std::string(staged_gpu_transport())};
  for (auto& name : registry.names(DeviceKind::kCuda)) out.push_back(std::move(name));
  return out;
}

bool gloo_may_carry(std::string_view name) {
  if (name == kAutoTransport) {
    for (const auto& row : kTable) {
      if (row.device == DeviceKind::kCpu && row.auto_fits != nullptr && row.uses_gloo) return true;
    }
    return false;
  }
  const TransportRow* row = find_transport(name);
  return row == nullptr || row->uses_gloo;
}

std::string setting_choices(std::string_view key) {
  std::vector<std::string> cpu, cuda, autos;
  std::string staged;
  for (const auto& row : kTable) {
    const std::string name(row.name);
    if (row.device == DeviceKind::kCuda) {
      cuda.push_back(name);
      continue;
    }
    cpu.push_back(name);
    if (row.auto_fits != nullptr) autos.push_back(name + " " + std::string(row.auto_help));
    if (row.stages_cuda) staged = name + " (staged through host memory)";
  }
  if (key == "cpu_transport") {
    return ": " + std::string(kAutoTransport) + " (" + joined(autos) + "), " + joined(cpu);
  }
  if (key == "gpu_transport") {
    const TransportRow* first = find_transport(default_gpu_transport());
    std::string out = ": " + std::string(kAutoTransport);
    if (first != nullptr) {
      out += " (" + std::string(first->name) + " " + std::string(first->auto_help) + ")";
    }
    if (!cuda.empty()) out += ", " + joined(cuda);
    if (!staged.empty()) out += ", " + staged;
    return out + ", or a transport plugin's name (transport_plugins)";
  }
  if (key == "gpu_staging_plugin") {
    return ": " + joined(cuda) + ", or a cuda plugin's name (transport_plugins)";
  }
  return "";
}

}  // namespace hvd::transports
