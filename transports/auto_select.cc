#include "transports/auto_select.h"

#include <spdlog/spdlog.h>

namespace hvd::transports {

Result<std::unique_ptr<Transport>> create_auto(const TransportContext& context,
                                               std::span<const AutoCandidate> candidates) {
  auto layout = exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  std::string refused;  // the last candidate's reason for not fitting
  for (const auto& candidate : candidates) {
    AutoFit fit = candidate.fits ? candidate.fits(*layout) : AutoFit{true, ""};
    if (!fit.fits) {
      refused = std::move(fit.why);
      continue;
    }
    spdlog::debug("cpu transport auto: {} (rank {} of {}: {})", candidate.name, context.rank,
                  context.size, fit.why.empty() ? refused : fit.why);
    if (candidate.make_for_layout != nullptr) return candidate.make_for_layout(context, *layout);
    return candidate.make(context);
  }
  return common::failed_precondition("cpu transport auto: no transport fits rank " +
                                     std::to_string(context.rank) + " of " +
                                     std::to_string(context.size) + " (" + refused + ")");
}

}  // namespace hvd::transports
