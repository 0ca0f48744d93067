#include "runtime/engine/device_event.h"

#include <utility>

namespace hvd::runtime::engine {

common::Result<std::shared_ptr<DeviceEvent>> DeviceEvent::record(
    std::shared_ptr<transports::DeviceWork> work, void* stream) {
  auto made = work->event_create();
  if (!made.is_ok()) return made.status();
  std::shared_ptr<DeviceEvent> event(new DeviceEvent(std::move(work), made.value(), stream));
  HVD_RETURN_IF_ERROR(event->work_->event_record(event->event_, stream));
  return event;
}

DeviceEvent::~DeviceEvent() { work_->event_destroy(event_); }

common::Result<bool> DeviceEvent::done() const { return work_->event_query(event_); }

common::Status DeviceEvent::order(void* stream) const {
  if (stream == stream_) return common::Status::ok();  // in stream order already
  return work_->stream_wait(stream, stream_, event_);
}

}  // namespace hvd::runtime::engine
