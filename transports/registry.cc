#include "transports/registry.h"

#include <utility>

#include "transports/auto_select.h"
#include "transports/gloo/factory.h"
#include "transports/hierarchical/factory.h"
#include "transports/shm/factory.h"

namespace hvd::transports {

TransportRegistry TransportRegistry::with_builtins() {
  TransportRegistry registry;
  gloo::register_transport(registry);
  shm::register_transport(registry);
  hierarchical::register_transport(registry);
  register_auto(registry);
  return registry;
}

void TransportRegistry::add(std::string name, DeviceKind device, TransportFactory factory) {
  entries_[std::move(name)] = Entry{device, std::move(factory)};
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(const std::string& name,
                                                             const TransportContext& context) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [registered, entry] : entries_) {
      if (!known.empty()) known += ", ";
      known += registered;
    }
    if (known.empty()) known = "none";
    return common::not_found("unknown transport '" + name + "' (registered: " + known + ")");
  }
  return it->second.factory(context);
}

std::vector<std::string> TransportRegistry::names(DeviceKind device) const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) {
    if (entry.device == device) out.push_back(name);
  }
  return out;
}

}  // namespace hvd::transports
