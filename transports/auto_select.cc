#include "transports/auto_select.h"

#include <spdlog/spdlog.h>
#include "transports/gloo/factory.h"
#include "transports/hierarchical/factory.h"
#include "transports/layout.h"
#include "transports/shm/factory.h"

namespace hvd::transports {

Result<std::unique_ptr<Transport>> create_auto(const TransportContext& context) {
  auto layout = exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  if (layout->cross_size == 1) {
    TransportContext local = context;
    local.local_size = context.size;
    spdlog::debug("cpu transport auto: shm (rank {} of {}: every rank on one host)", context.rank,
                  context.size);
    return shm::create(local);
  }
  if (layout->homogeneous && layout->local_size > 1) {
    spdlog::debug("cpu transport auto: hierarchical (rank {} of {}: {} hosts of {} ranks)",
                  context.rank, context.size, layout->cross_size, layout->local_size);
    return hierarchical::create(context, *layout);
  }
  spdlog::debug("cpu transport auto: gloo (rank {} of {}: {} hosts)", context.rank, context.size,
                layout->cross_size);
  return gloo::create(context);
}

void register_auto(TransportRegistry& registry) {
  registry.add(kAutoTransport, DeviceKind::kCpu, &create_auto);
}

}  // namespace hvd::transports
