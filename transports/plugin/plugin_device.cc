#include "transports/plugin/plugin_device.h"

#include <cstddef>
#include <utility>

#include "transports/plugin/plugin_world.h"

namespace hvd::transports::plugin {

static_assert(sizeof(DeviceCopy) == sizeof(hvd_plugin_copy) &&
                  offsetof(DeviceCopy, dst) == offsetof(hvd_plugin_copy, dst) &&
                  offsetof(DeviceCopy, src) == offsetof(hvd_plugin_copy, src) &&
                  offsetof(DeviceCopy, bytes) == offsetof(hvd_plugin_copy, bytes),
              "DeviceCopy must match hvd_plugin_copy");

common::Result<std::unique_ptr<DeviceWork>> PluginDevice::open(
    std::shared_ptr<LoadedPlugin> plugin, int device, std::chrono::milliseconds timeout) {
  if (plugin->device() != DeviceKind::kCuda) {
    return common::failed_precondition("transport plugin " + plugin->path() +
                                       " is a cpu plugin: no device functions");
  }
  if (!plugin->has_device_work()) {
    return common::failed_precondition(
        "transport plugin " + plugin->path() + " has ABI version " +
        std::to_string(plugin->abi_version()) +
        ": no device functions; device ops need version 2");
  }
  hvd_plugin_status status{};
  void* context = nullptr;
  const int32_t code = plugin->api().device_open(device, timeout.count(), &context, &status);
  HVD_RETURN_IF_ERROR(from_plugin_status(
      code, status, std::string(plugin->name()) + " device_open(" + std::to_string(device) + ")"));
  if (context == nullptr) {
    return common::internal_error(std::string(plugin->name()) + " device_open gave no context");
  }
  void* comm = nullptr;
  if (plugin->has_comm_stream()) {
    const int32_t made = plugin->api().device_comm_stream(context, &comm, &status);
    Status stream = from_plugin_status(made, status, std::string(plugin->name()) +
                                                         " device_comm_stream(" +
                                                         std::to_string(device) + ")");
    if (!stream.is_ok()) {
      plugin->api().device_close(context);
      return stream;
    }
  }
  return std::unique_ptr<DeviceWork>(new PluginDevice(std::move(plugin), context, device, comm));
}

PluginDevice::~PluginDevice() { plugin_->api().device_close(context_); }

Status PluginDevice::result(int32_t code, const hvd_plugin_status& status,
                            const char* call) const {
  if (code == HVD_OK) return Status::ok();
  return from_plugin_status(code, status, name_ + " " + call);
}

common::Result<void*> PluginDevice::alloc(size_t bytes, bool pinned_host) {
  hvd_plugin_status status{};
  void* memory = nullptr;
  const int32_t code =
      plugin_->api().device_alloc(context_, bytes, pinned_host ? 1 : 0, &memory, &status);
  HVD_RETURN_IF_ERROR(result(code, status, pinned_host ? "pinned alloc" : "device alloc"));
  if (memory == nullptr && bytes > 0) {
    return common::internal_error(name_ + " device_alloc gave no memory for " +
                                  std::to_string(bytes) + " bytes");
  }
  return memory;
}

void PluginDevice::free(void* memory, bool pinned_host) {
  if (memory != nullptr) plugin_->api().device_free(context_, memory, pinned_host ? 1 : 0);
}

Status PluginDevice::copy(std::span<const DeviceCopy> copies, void* stream) {
  if (copies.empty()) return Status::ok();
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().device_copy(
      context_, reinterpret_cast<const hvd_plugin_copy*>(copies.data()), copies.size(), stream,
      &status);
  return result(code, status, "device_copy");
}

Status PluginDevice::scale(void* data, size_t count, common::DataType type, int divisor,
                           double factor, void* stream) {
  if (count == 0 || (divisor == 1 && factor == 1.0)) return Status::ok();
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().device_scale(context_, data, count,
                                                   static_cast<int32_t>(type), divisor, factor,
                                                   stream, &status);
  return result(code, status, "device_scale");
}

Status PluginDevice::synchronize(void* stream) {
  std::lock_guard lock(sync_mu_);
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().device_synchronize(context_, stream, &status);
  return result(code, status, "device_synchronize");
}

Status PluginDevice::stream_wait(void* waiter, void* stream, void* event) {
  if (!plugin_->has_comm_stream()) {
    return common::failed_precondition(name_ + ": the plugin has no device_stream_wait (ABI "
                                       "version " + std::to_string(plugin_->abi_version()) +
                                       " < 3)");
  }
  hvd_plugin_status status{};
  const int32_t code =
      plugin_->api().device_stream_wait(context_, waiter, stream, event, &status);
  return result(code, status, "device_stream_wait");
}

common::Result<void*> PluginDevice::event_create() {
  if (!has_events()) return DeviceWork::event_create();
  hvd_plugin_status status{};
  void* event = nullptr;
  const int32_t code = plugin_->api().device_event_create(context_, &event, &status);
  HVD_RETURN_IF_ERROR(result(code, status, "device_event_create"));
  if (event == nullptr) return common::internal_error(name_ + " device_event_create gave no event");
  return event;
}

void PluginDevice::event_destroy(void* event) {
  if (event != nullptr && has_events()) plugin_->api().device_event_destroy(context_, event);
}

Status PluginDevice::event_record(void* event, void* stream) {
  if (!has_events()) return DeviceWork::event_record(event, stream);
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().device_event_record(context_, event, stream, &status);
  return result(code, status, "device_event_record");
}

common::Result<bool> PluginDevice::event_query(void* event) {
  if (!has_events()) return DeviceWork::event_query(event);
  hvd_plugin_status status{};
  int32_t done = 0;
  const int32_t code = plugin_->api().device_event_query(context_, event, &done, &status);
  HVD_RETURN_IF_ERROR(result(code, status, "device_event_query"));
  return done != 0;
}

Status PluginDevice::copy_on_device(std::span<const DeviceCopy> copies, void* stream) {
  if (!has_events()) return copy(copies, stream);
  if (copies.empty()) return Status::ok();
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().device_copy_on_device(
      context_, reinterpret_cast<const hvd_plugin_copy*>(copies.data()), copies.size(), stream,
      &status);
  return result(code, status, "device_copy_on_device");
}

}  // namespace hvd::transports::plugin
