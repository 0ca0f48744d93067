// DeviceWork (transports/device_work.h) over a loaded CUDA plugin's ABI
// version 2 device_* functions: one device context (device_open with the
// ordinal and the transport timeout), closed when this goes; with ABI
// version 3 also its communication stream and stream waits; with version 4
// its events and copies without classification. Holds the
// LoadedPlugin. A plugin without them (ABI version 1, or a CPU plugin) is
// refused at open() with one line saying so.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "transports/device_work.h"
#include "transports/plugin/plugin_loader.h"

namespace hvd::transports::plugin {

class PluginDevice final : public DeviceWork {
 public:
  // kFailedPrecondition "transport plugin PATH has ABI version 1: no device
  // functions; device ops need version 2" (or: is a cpu plugin); the
  // plugin's device_open status when it fails.
  static common::Result<std::unique_ptr<DeviceWork>> open(std::shared_ptr<LoadedPlugin> plugin,
                                                          int device,
                                                          std::chrono::milliseconds timeout);
  ~PluginDevice() override;

  const std::string& name() const override { return name_; }
  int device() const override { return device_; }
  common::Result<void*> alloc(size_t bytes, bool pinned_host) override;
  void free(void* memory, bool pinned_host) override;
  common::Status copy(std::span<const DeviceCopy> copies, void* stream) override;
  common::Status scale(void* data, size_t count, common::DataType type, int divisor,
                       double factor, void* stream) override;
  common::Status synchronize(void* stream) override;
  void* comm_stream() const override { return comm_stream_; }
  common::Status stream_wait(void* waiter, void* stream, void* event) override;
  // ABI version 4 (has_events() false for an older plugin: the defaults).
  bool has_events() const override { return plugin_->has_events(); }
  common::Result<void*> event_create() override;
  void event_destroy(void* event) override;
  common::Status event_record(void* event, void* stream) override;
  common::Result<bool> event_query(void* event) override;
  common::Status copy_on_device(std::span<const DeviceCopy> copies, void* stream) override;

 private:
  PluginDevice(std::shared_ptr<LoadedPlugin> plugin, void* context, int device,
               void* comm_stream)
      : plugin_(std::move(plugin)), context_(context), device_(device),
        comm_stream_(comm_stream),
        name_(std::string(plugin_->name()) + " device " + std::to_string(device)) {}
  common::Status result(int32_t code, const hvd_plugin_status& status, const char* call) const;

  std::shared_ptr<LoadedPlugin> plugin_;
  void* context_;
  const int device_;
  void* const comm_stream_;  // the context's (ABI version 3), or null
  const std::string name_;
  std::mutex sync_mu_;  // one device_synchronize at a time (the plugin's event is shared)
};

}  // namespace hvd::transports::plugin
