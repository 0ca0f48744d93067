#include "transports/plugin/known_plugins.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>

#include "transports/plugin/plugin_loader.h"
#include "transports/plugin/plugin_transport.h"

namespace hvd::transports::plugin {

namespace {

using LoadResult = common::Result<std::shared_ptr<LoadedPlugin>>;

// Loads the plugin and checks that it is the one declared.
LoadResult load_declared(const KnownPlugin& plugin) {
  std::string library = plugin.library;
  std::string looked;
  if (library.find('/') == std::string::npos) {
    for (const auto& dir : plugin_directories()) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir / library, ec)) {
        library = (dir / library).string();
        break;
      }
      looked += (looked.empty() ? "" : ", ") + dir.string();
    }
  }
  auto loaded = LoadedPlugin::load(library);
  if (!loaded.is_ok()) {
    if (looked.empty()) return loaded.status();
    return Status(loaded.status().code(),
                  loaded.status().message() + " (also looked in " + looked + ")");
  }
  const auto& found = *loaded.value();
  if (found.name() != plugin.name || found.device() != plugin.device) {
    return common::failed_precondition(
        "transport plugin " + found.path() + " is '" + std::string(found.name()) + "' (" +
        std::string(device_kind_name(found.device())) + "), expected '" + plugin.name + "' (" +
        std::string(device_kind_name(plugin.device)) + ")");
  }
  return loaded;
}

// One registry entry's plugin: loaded and probed once, on first use.
class PluginSlot {
 public:
  explicit PluginSlot(KnownPlugin plugin) : plugin_(plugin) {}

  LoadResult loaded() {
    std::lock_guard lock(mutex_);
    if (!loaded_) loaded_.emplace(load_declared(plugin_));
    return *loaded_;
  }

  Availability availability() {
    auto plugin = loaded();
    if (!plugin.is_ok()) return Availability{false, plugin.status().message()};
    std::lock_guard lock(mutex_);
    if (!can_run_) can_run_ = plugin.value()->can_run();
    return *can_run_;
  }

 private:
  const KnownPlugin plugin_;
  std::mutex mutex_;
  std::optional<LoadResult> loaded_;     // guarded by mutex_
  std::optional<Availability> can_run_;  // guarded by mutex_
};

}  // namespace

const std::vector<KnownPlugin>& known_plugins() {
  static const std::vector<KnownPlugin> kPlugins = {
      {"nccl", DeviceKind::kCuda, "libhvd_nccl.so"},
  };
  return kPlugins;
}

std::vector<std::filesystem::path> plugin_directories() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_directories), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  const auto dir = std::filesystem::absolute(info.dli_fname, ec).parent_path();
  if (ec) return {};
  const auto lib = (dir / ".." / "lib").lexically_normal();
  if (lib == dir) return {dir};
  return {dir, lib};
}

void register_plugin(TransportRegistry& registry, const KnownPlugin& plugin) {
  auto slot = std::make_shared<PluginSlot>(plugin);
  registry.add(
      plugin.name, plugin.device,
      [slot](const TransportContext& context) -> common::Result<std::unique_ptr<Transport>> {
        auto loaded = slot->loaded();
        if (!loaded.is_ok()) return loaded.status();
        return PluginTransport::connect(std::move(loaded).value(), context);
      },
      [slot] { return slot->availability(); });
}

void register_known_plugins(TransportRegistry& registry) {
  for (const auto& plugin : known_plugins()) register_plugin(registry, plugin);
}

PluginLoadReport try_load(const KnownPlugin& plugin) {
  PluginLoadReport report;
  report.library = plugin.library;
  auto loaded = load_declared(plugin);
  if (!loaded.is_ok()) {
    report.error = loaded.status().message();
    return report;
  }
  report.path = loaded.value()->path();
  report.abi_version = loaded.value()->abi_version();
  return report;
}

}  // namespace hvd::transports::plugin
