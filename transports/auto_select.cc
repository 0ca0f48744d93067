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
  const hierarchical::Choice choice = hierarchical::choose(*layout);
  if (choice.hierarchical) {
    spdlog::debug("cpu transport auto: hierarchical (rank {} of {}: {})", context.rank,
                  context.size, choice.why);
    return hierarchical::create(context, *layout);
  }
  spdlog::debug("cpu transport auto: gloo (rank {} of {}: {})", context.rank, context.size,
                choice.why);
  return gloo::create(context);
}

void register_auto(TransportRegistry& registry) {
  registry.add(kAutoTransport, DeviceKind::kCpu, &create_auto);
}

}  // namespace hvd::transports
