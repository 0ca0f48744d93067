#include "transports/shm/factory.h"

#include "transports/shm/shm_transport.h"

namespace hvd::transports::shm {

Result<std::unique_ptr<Transport>> create(const TransportContext& context) {
  return ShmTransport::connect(context);
}

}  // namespace hvd::transports::shm
