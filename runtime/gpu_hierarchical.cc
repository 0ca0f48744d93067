#include "runtime/gpu_hierarchical.h"

#include <spdlog/spdlog.h>

#include "transports/hierarchical/factory.h"

namespace hvd::runtime {

common::Result<std::optional<transports::Layout>> hierarchical_layout(
    const transports::TransportContext& context, const std::string& hierarchical,
    const std::string& flat) {
  auto layout = transports::exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  const transports::hierarchical::Choice choice = transports::hierarchical::choose(*layout);
  if (context.rank == 0) {
    if (choice.hierarchical) {
      spdlog::info("device allreduce of this process set is hierarchical ({}): {}", choice.why,
                   hierarchical);
    } else {
      spdlog::info("hierarchical allreduce is on (HVD_HIERARCHICAL_ALLREDUCE) but this process "
                   "set's device ops use the flat transport ({}): {}", flat, choice.why);
    }
  }
  if (!choice.hierarchical) return std::optional<transports::Layout>();
  return std::optional<transports::Layout>(std::move(layout).value());
}

}  // namespace hvd::runtime
