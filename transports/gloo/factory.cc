#include "transports/gloo/factory.h"

#include "transports/gloo/gloo_transport.h"

namespace hvd::transports::gloo {

Result<std::unique_ptr<Transport>> create(const TransportContext& context) {
  return GlooTransport::connect(context);
}

void register_transport(TransportRegistry& registry) {
  registry.add(kName, DeviceKind::kCpu, &create);
}

}  // namespace hvd::transports::gloo
