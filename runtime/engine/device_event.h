// The completion of a device batch: an event of the device's work
// (transports/device_work.h, a plugin of ABI version 4) recorded on the
// communication stream after the batch's last copy, scaling or collective.
// It completes when the batch's work on the device is done. Shared by the
// batch in flight (device_completions.h), the handles of its ops (a
// framework stream waits on it: hvd_wait_on_stream) and their
// engine-allocated outputs (a copy on the caller's stream is ordered after
// it); the event goes back to the device when the last of them lets go.
#pragma once

#include <memory>

#include "common/status.h"
#include "transports/device_work.h"

namespace hvd::runtime::engine {

class DeviceEvent {
 public:
  // An event recorded now on `stream` (completes when the stream reaches
  // this point); the work's failure to create or record it otherwise.
  static common::Result<std::shared_ptr<DeviceEvent>> record(
      std::shared_ptr<transports::DeviceWork> work, void* stream);
  ~DeviceEvent();
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  // Whether the work before it is done; never blocks.
  common::Result<bool> done() const;
  // `stream` (a stream of the same device; null: the legacy default one)
  // waits for this event on the device: no host wait.
  common::Status order(void* stream) const;

  void* stream() const { return stream_; }
  transports::DeviceWork& work() const { return *work_; }
  const std::shared_ptr<transports::DeviceWork>& shared_work() const { return work_; }

 private:
  DeviceEvent(std::shared_ptr<transports::DeviceWork> work, void* event, void* stream)
      : work_(std::move(work)), event_(event), stream_(stream) {}

  std::shared_ptr<transports::DeviceWork> work_;
  void* event_;
  void* stream_;  // recorded on
};

}  // namespace hvd::runtime::engine
