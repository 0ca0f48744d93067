#include "transports/hierarchical/factory.h"

#include <string>

#include "transports/gloo/factory.h"
#include "transports/hierarchical/hierarchical_transport.h"
#include "transports/shm/factory.h"

namespace hvd::transports::hierarchical {

namespace {

TransportContext part(const TransportContext& context, int rank, int size, std::string prefix) {
  TransportContext out = context;
  out.rank = rank;
  out.size = size;
  out.key_prefix = context.key_prefix + "h/" + prefix + "/";
  return out;
}

}  // namespace

Result<std::unique_ptr<Transport>> create(const TransportContext& context, const Layout& layout) {
  if (!layout.homogeneous) {
    std::string counts;
    for (const auto& host : layout.hosts) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(host.size());
    }
    return common::failed_precondition(
        "hierarchical collectives need the same number of ranks on every host; the hosts have " +
        counts);
  }
  // Every rank connects the three worlds in the same order.
  TransportContext local = part(context, layout.local_rank, layout.local_size,
                                "local" + std::to_string(layout.cross_rank));
  local.local_size = layout.local_size;
  auto local_transport = shm::create(local);
  if (!local_transport.is_ok()) return local_transport.status();
  auto cross = gloo::create(part(context, layout.cross_rank, layout.cross_size,
                                 "cross" + std::to_string(layout.local_rank)));
  if (!cross.is_ok()) return cross.status();
  auto flat = gloo::create(part(context, context.rank, context.size, "flat"));
  if (!flat.is_ok()) return flat.status();
  return std::unique_ptr<Transport>(std::make_unique<HierarchicalTransport>(
      std::move(local_transport).value(), std::move(cross).value(), std::move(flat).value()));
}

Result<std::unique_ptr<Transport>> create(const TransportContext& context) {
  auto layout = exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  return create(context, *layout);
}

void register_transport(TransportRegistry& registry) {
  registry.add(kName, DeviceKind::kCpu,
               [](const TransportContext& context) { return create(context); });
}

}  // namespace hvd::transports::hierarchical
