// Loads a transport plugin (transport_plugin.h): dlopen()s its library,
// finds HVD_TRANSPORT_PLUGIN_SYMBOL, checks struct_size and abi_version (older
// versions it knows are accepted, a newer one refused naming both), and
// keeps the library loaded for as long as a LoadedPlugin or a transport made
// from it lives. Every failure is one line: the library not found (with
// dlerror's text), the symbol missing, the version too new, a field missing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "transports/plugin/transport_plugin.h"
#include "transports/registry.h"

namespace hvd::transports::plugin {

// The bytes of hvd_transport_plugin_t that a plugin of `abi_version` has (0
// for a version this loader does not know).
size_t required_struct_size(uint32_t abi_version);

// Checks an exported plugin struct; `where` names it in errors (the path).
Status validate(const hvd_transport_plugin_t& api, std::string_view where);

class LoadedPlugin {
 public:
  // `library`: a path (with a '/') or a file name that dlopen searches for
  // (LD_LIBRARY_PATH, the rpath); see find_plugin_library() for the usual
  // places.
  static common::Result<std::shared_ptr<LoadedPlugin>> load(const std::string& library);
  ~LoadedPlugin();

  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const hvd_transport_plugin_t& api() const { return *api_; }
  std::string_view name() const { return api_->name; }
  DeviceKind device() const { return static_cast<DeviceKind>(api_->device); }
  uint32_t abi_version() const { return api_->abi_version; }
  const std::string& path() const { return path_; }  // as dlopen resolved it

  // The plugin's can_run(), its reason when it cannot.
  Availability can_run() const;

  // Whether it has the device_* functions (a CUDA plugin of ABI version >= 2).
  bool has_device_work() const {
    return api_->abi_version >= 2 && api_->device == HVD_PLUGIN_DEVICE_CUDA;
  }
  // ABI version 3's device_comm_stream and device_stream_wait (never read
  // from an older plugin: its struct ends before them).
  bool has_comm_stream() const {
    return api_->abi_version >= 3 && api_->device == HVD_PLUGIN_DEVICE_CUDA;
  }
  // ABI version 4's device_event_* and device_copy_on_device (a CUDA
  // plugin; validate() checked they are set). Its collectives return once
  // enqueued.
  bool has_events() const {
    return api_->abi_version >= 4 && api_->device == HVD_PLUGIN_DEVICE_CUDA;
  }
  // ABI version 4's async_error, when the plugin sets it (any device).
  bool has_async_error() const {
    return api_->abi_version >= 4 && api_->async_error != nullptr;
  }
  // ABI version 4's shrink, when the plugin sets it.
  bool has_shrink() const { return api_->abi_version >= 4 && api_->shrink != nullptr; }

 private:
  LoadedPlugin(void* library, const hvd_transport_plugin_t* api, std::string path)
      : library_(library), api_(api), path_(std::move(path)) {}

  void* library_;
  const hvd_transport_plugin_t* api_;
  std::string path_;
};

}  // namespace hvd::transports::plugin
