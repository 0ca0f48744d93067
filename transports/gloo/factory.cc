#include "transports/gloo/factory.h"

#include "transports/gloo/gloo_transport.h"

namespace hvd::transports::gloo {

Result<std::unique_ptr<Transport>> create(const TransportContext& context) {
  return GlooTransport::connect(context);
}

}  // namespace hvd::transports::gloo
