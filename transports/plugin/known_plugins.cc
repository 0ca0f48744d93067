#include "transports/plugin/known_plugins.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>

#include "transports/plugin/plugin_device.h"
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
      [slot] { return slot->availability(); },
      [slot](int device,
             std::chrono::milliseconds timeout) -> common::Result<std::unique_ptr<DeviceWork>> {
        auto loaded = slot->loaded();
        if (!loaded.is_ok()) return loaded.status();
        return PluginDevice::open(std::move(loaded).value(), device, timeout);
      });
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

common::Result<KnownPlugin> parse_plugin(std::string_view entry) {
  const std::string quoted = "'" + std::string(entry) + "'";
  const size_t first = entry.find(':');
  const size_t second = first == std::string_view::npos ? first : entry.find(':', first + 1);
  if (second == std::string_view::npos) {
    return common::invalid_argument("transport_plugins: " + quoted +
                                    " is not NAME:DEVICE:LIBRARY (e.g. mine:cuda:libmine.so)");
  }
  KnownPlugin plugin;
  plugin.name = std::string(trim(entry.substr(0, first)));
  const std::string_view device = trim(entry.substr(first + 1, second - first - 1));
  plugin.library = std::string(trim(entry.substr(second + 1)));
  if (plugin.name.empty() || plugin.library.empty()) {
    return common::invalid_argument("transport_plugins: " + quoted +
                                    " has an empty name or library");
  }
  if (device == "cuda") {
    plugin.device = DeviceKind::kCuda;
  } else if (device == "cpu") {
    plugin.device = DeviceKind::kCpu;
  } else {
    return common::invalid_argument("transport_plugins: device '" + std::string(device) +
                                    "' in " + quoted + " is neither cpu nor cuda");
  }
  return plugin;
}

}  // namespace

common::Result<std::vector<KnownPlugin>> parse_plugin_list(std::string_view text) {
  std::vector<KnownPlugin> plugins;
  while (!trim(text).empty()) {
    const size_t comma = text.find(',');
    auto plugin = parse_plugin(trim(text.substr(0, comma)));
    if (!plugin.is_ok()) return plugin.status();
    plugins.push_back(std::move(plugin).value());
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return plugins;
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
