// How a plugin becomes a registry entry: declared with its name, device and
// library (the transport table's plugin rows, transports/table/, and the
// transport_plugins setting's), its library loaded only when the entry is
// first asked whether it can run or to create a transport (the first CUDA
// tensor), never before.
//
// A library name without '/' is looked for beside the module holding this
// code (libhvd.so, or hvdrun) and in ../lib from there, then where dlopen
// looks (LD_LIBRARY_PATH, the rpath).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "transports/registry.h"

namespace hvd::transports::plugin {

struct KnownPlugin {
  std::string name;     // the registry name
  DeviceKind device;
  std::string library;  // file name of the shared library (or a path)
};

// What becomes of a plugin: loaded from `path` (ABI `abi_version`), or
// `error` saying why not (not found, not a plugin, too new, wrong name).
struct PluginLoadReport {
  std::string library;
  std::string path;
  unsigned abi_version = 0;
  std::string error;
};

// The directories a bare library name is looked for in, in order.
std::vector<std::filesystem::path> plugin_directories();

// Adds a lazily loaded entry for `plugin` (its library a path or a name).
// Loading it checks that the plugin's own name and device are the declared
// ones; what it learns (loaded or not, can run or not) is kept.
void register_plugin(TransportRegistry& registry, const KnownPlugin& plugin);

// The extra plugins of the transport_plugins setting (HVD_TRANSPORT_PLUGINS):
// comma-separated NAME:DEVICE:LIBRARY entries, DEVICE cpu or cuda, LIBRARY a
// path or a file name (looked for as above); blanks around entries are
// ignored, "" is none. kInvalidArgument naming the bad entry otherwise.
common::Result<std::vector<KnownPlugin>> parse_plugin_list(std::string_view text);

// Loads `plugin` now, for diagnostics (hvdrun --check-build).
PluginLoadReport try_load(const KnownPlugin& plugin);

}  // namespace hvd::transports::plugin
