#include "transports/registry.h"

#include <utility>

namespace hvd::transports {

std::string_view device_kind_name(DeviceKind device) {
  return device == DeviceKind::kCuda ? "cuda" : "cpu";
}

void TransportRegistry::add(std::string name, DeviceKind device, TransportFactory factory,
                            AvailabilityProbe probe, DeviceWorkOpener open_device) {
  entries_[std::move(name)] =
      Entry{device, std::move(factory), std::move(probe), std::move(open_device)};
}

Result<std::unique_ptr<DeviceWork>> TransportRegistry::open_device(
    const std::string& name, int device, std::chrono::milliseconds timeout) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return common::not_found("unknown transport '" + name + "'");
  if (!it->second.open_device) {
    return common::failed_precondition("transport '" + name + "' has no device functions");
  }
  Availability here = availability(it->second);
  if (!here.available) {
    return common::failed_precondition("transport '" + name + "' cannot run here: " +
                                       here.reason);
  }
  return it->second.open_device(device, timeout);
}

Availability TransportRegistry::availability(const Entry& entry) {
  return entry.probe ? entry.probe() : Availability{};
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(const std::string& name,
                                                             const TransportContext& context) const {
  std::vector<std::string> known;
  for (const auto& [registered, entry] : entries_) known.push_back(registered);
  auto it = entries_.find(name);
  return create(name, it == entries_.end() ? nullptr : &it->second, known, context);
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(DeviceKind device,
                                                             const std::string& name,
                                                             const TransportContext& context) const {
  auto it = entries_.find(name);
  if (it != entries_.end() && it->second.device != device) {
    return common::failed_precondition(
        "transport '" + name + "' is for " + std::string(device_kind_name(it->second.device)) +
        " tensors, not " + std::string(device_kind_name(device)) + " tensors");
  }
  return create(name, it == entries_.end() ? nullptr : &it->second, names(device), context);
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(
    const std::string& name, const Entry* entry, const std::vector<std::string>& known,
    const TransportContext& context) const {
  if (entry == nullptr) {
    std::string list;
    for (const auto& registered : known) list += (list.empty() ? "" : ", ") + registered;
    if (list.empty()) list = "none";
    return common::not_found("unknown transport '" + name + "' (registered: " + list + ")");
  }
  Availability here = availability(*entry);
  if (!here.available) {
    return common::failed_precondition("transport '" + name + "' cannot run here: " +
                                       here.reason);
  }
  return entry->factory(context);
}

std::vector<std::string> TransportRegistry::names(DeviceKind device) const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) {
    if (entry.device == device) out.push_back(name);
  }
  return out;
}

Availability TransportRegistry::availability(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return Availability{false, "no transport '" + name + "' is registered"};
  return availability(it->second);
}

std::vector<TransportInfo> TransportRegistry::list() const {
  std::vector<TransportInfo> out;
  for (const auto& [name, entry] : entries_) {
    out.push_back(TransportInfo{name, entry.device, availability(entry)});
  }
  return out;
}

}  // namespace hvd::transports
