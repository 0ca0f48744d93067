#include "runtime/gpu_hierarchical.h"

#include <spdlog/spdlog.h>

#include "transports/hierarchical/factory.h"

namespace hvd::runtime {

HierarchicalChoice choose_hierarchical(const transports::Layout& layout) {
  if (layout.cross_size <= 1) return {false, "every rank of the set is on one host"};
  if (!layout.homogeneous) {
    return {false, "its hosts have unequal numbers of ranks (" +
                       transports::hierarchical::host_sizes(layout) + ")"};
  }
  if (layout.local_size == 1) {
    return {false, "each of its " + std::to_string(layout.cross_size) +
                       " hosts has one rank: nothing to reduce within a host"};
  }
  return {true, std::to_string(layout.cross_size) + " hosts of " +
                    std::to_string(layout.local_size) + " ranks"};
}

common::Result<std::optional<transports::Layout>> hierarchical_layout(
    const transports::TransportContext& context, const std::string& hierarchical,
    const std::string& flat) {
  auto layout = transports::exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  const HierarchicalChoice choice = choose_hierarchical(*layout);
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
