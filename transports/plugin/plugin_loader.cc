#include "transports/plugin/plugin_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <utility>

#include "common/status.h"

namespace hvd::transports::plugin {

// The C header's constants are the C++ ones.
static_assert(HVD_PLUGIN_DEVICE_CPU == static_cast<int32_t>(DeviceKind::kCpu));
static_assert(HVD_PLUGIN_DEVICE_CUDA == static_cast<int32_t>(DeviceKind::kCuda));
static_assert(HVD_TRANSPORT_PLUGIN_ABI_OLDEST >= 1 &&
              HVD_TRANSPORT_PLUGIN_ABI_OLDEST <= HVD_TRANSPORT_PLUGIN_ABI_VERSION);
static_assert(offsetof(hvd_transport_plugin_t, struct_size) == 0);
static_assert(offsetof(hvd_transport_plugin_t, abi_version) == sizeof(uint32_t));
static_assert(offsetof(hvd_plugin_world, struct_size) == 0);
static_assert(HVD_PLUGIN_MESSAGE_SIZE >= 64);

namespace {

std::string last_dl_error() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

}  // namespace

size_t required_struct_size(uint32_t abi_version) {
  switch (abi_version) {
    // Version 1: every field up to destroy. A version 2 appends fields; its
    // plugins' struct_size is then larger, and version 1's stays this.
    case 1: return offsetof(hvd_transport_plugin_t, destroy) + sizeof(void (*)(void*));
    // Version 2: the device_* functions.
    case 2: return offsetof(hvd_transport_plugin_t, device_synchronize) + sizeof(void*);
    // Version 3: the communication stream.
    case 3: return offsetof(hvd_transport_plugin_t, device_stream_wait) + sizeof(void*);
    // Version 4: completion on the device (events, async_error, shrink).
    case 4: return sizeof(hvd_transport_plugin_t);
    default: return 0;
  }
}

Status validate(const hvd_transport_plugin_t& api, std::string_view where) {
  const std::string plugin = "transport plugin " + std::string(where);
  const uint32_t version = api.abi_version;
  if (version > HVD_TRANSPORT_PLUGIN_ABI_VERSION) {
    return common::failed_precondition(
        plugin + " has ABI version " + std::to_string(version) +
        ", newer than this hvd's version " + std::to_string(HVD_TRANSPORT_PLUGIN_ABI_VERSION) +
        ": use a plugin built for this hvd, or a newer hvd");
  }
  if (version < HVD_TRANSPORT_PLUGIN_ABI_OLDEST) {
    return common::failed_precondition(
        plugin + " has ABI version " + std::to_string(version) + ", older than the oldest " +
        std::to_string(HVD_TRANSPORT_PLUGIN_ABI_OLDEST) + " this hvd accepts");
  }
  const size_t needed = required_struct_size(version);
  if (api.struct_size < needed) {
    return common::failed_precondition(plugin + ": struct_size " +
                                       std::to_string(api.struct_size) + " is below the " +
                                       std::to_string(needed) + " bytes of ABI version " +
                                       std::to_string(version));
  }
  if (api.name == nullptr || api.name[0] == '\0') {
    return common::failed_precondition(plugin + " has no name");
  }
  if (api.device != HVD_PLUGIN_DEVICE_CPU && api.device != HVD_PLUGIN_DEVICE_CUDA) {
    return common::failed_precondition(plugin + " names an unknown device " +
                                       std::to_string(api.device));
  }
  const bool complete = api.can_run && api.create && api.allreduce && api.allgatherv &&
                        api.broadcast && api.alltoallv && api.reducescatter && api.barrier &&
                        api.abort && api.destroy;
  if (!complete) return common::failed_precondition(plugin + " leaves a function pointer null");
  if (version >= 2 && api.device == HVD_PLUGIN_DEVICE_CUDA) {
    const bool device = api.device_open && api.device_close && api.device_alloc &&
                        api.device_free && api.device_copy && api.device_scale &&
                        api.device_synchronize;
    if (!device) {
      return common::failed_precondition(plugin + " (CUDA, ABI version 2) leaves a device_* "
                                         "function null");
    }
  }
  if (version >= 3 && api.device == HVD_PLUGIN_DEVICE_CUDA &&
      (api.device_comm_stream == nullptr || api.device_stream_wait == nullptr)) {
    return common::failed_precondition(plugin + " (CUDA, ABI version 3) leaves "
                                       "device_comm_stream or device_stream_wait null");
  }
  if (version >= 4 && api.device == HVD_PLUGIN_DEVICE_CUDA &&
      (api.device_event_create == nullptr || api.device_event_destroy == nullptr ||
       api.device_event_record == nullptr || api.device_event_query == nullptr ||
       api.device_copy_on_device == nullptr)) {
    return common::failed_precondition(plugin + " (CUDA, ABI version 4) leaves a "
                                       "device_event_* function or device_copy_on_device null");
  }
  return Status::ok();
}

common::Result<std::shared_ptr<LoadedPlugin>> LoadedPlugin::load(const std::string& library) {
  // RTLD_NODELETE: a CUDA library must not be unmapped while its threads or
  // atexit handlers may still run.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    return common::not_found("transport plugin " + library + " cannot be loaded: " +
                             last_dl_error());
  }
  std::string path = library;
  if (link_map* map = nullptr; dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    path = map->l_name;
  }
  dlerror();
  void* symbol = dlsym(handle, HVD_TRANSPORT_PLUGIN_SYMBOL);
  if (symbol == nullptr) {
    std::string error = last_dl_error();
    dlclose(handle);
    return common::not_found("transport plugin " + path + " exports no " +
                             HVD_TRANSPORT_PLUGIN_SYMBOL + " (" + error +
                             "): not an hvd transport plugin");
  }
  const auto* api = static_cast<const hvd_transport_plugin_t*>(symbol);
  if (Status valid = validate(*api, path); !valid.is_ok()) {
    dlclose(handle);
    return valid;
  }
  return std::shared_ptr<LoadedPlugin>(new LoadedPlugin(handle, api, std::move(path)));
}

LoadedPlugin::~LoadedPlugin() { dlclose(library_); }

Availability LoadedPlugin::can_run() const {
  char why[HVD_PLUGIN_MESSAGE_SIZE] = {};
  if (api_->can_run(why, sizeof(why)) != 0) return {};
  why[sizeof(why) - 1] = '\0';
  return Availability{false, why[0] != '\0' ? why : "the plugin gave no reason"};
}

}  // namespace hvd::transports::plugin
