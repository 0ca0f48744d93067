#include "transports/hierarchical/factory.h"

#include <string>

#include "transports/gloo/factory.h"
#include "transports/hierarchical/hierarchical_transport.h"
#include "transports/shm/factory.h"

namespace hvd::transports::hierarchical {

std::string host_sizes(const Layout& layout) {
  std::string counts;
  for (const auto& host : layout.hosts) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(host.size());
  }
  return counts;
}

Choice choose(const Layout& layout) {
  if (layout.host_count <= 1) return {false, "every rank of the set is on one host"};
  if (!layout.homogeneous) {
    return {false, "its hosts have unequal numbers of ranks (" + host_sizes(layout) + ")"};
  }
  if (layout.local_size == 1) {
    return {false, "each of its " + std::to_string(layout.host_count) +
                       " hosts has one rank: nothing to reduce within a host"};
  }
  return {true, std::to_string(layout.host_count) + " hosts of " +
                    std::to_string(layout.local_size) + " ranks"};
}

Status check_homogeneous(const Layout& layout) {
  if (layout.homogeneous) return Status::ok();
  return common::failed_precondition(
      "hierarchical collectives need the same number of ranks on every host; the hosts have " +
      host_sizes(layout));
}

TransportContext sub_world(const TransportContext& context, const Layout& layout, World world) {
  TransportContext out = context;
  switch (world) {
    case World::kLocal:
      out.rank = layout.local_rank;
      out.size = layout.local_size;
      out.local_size = layout.local_size;
      out.local_rank = layout.local_rank;
      out.cross_rank = 0;
      out.cross_size = 1;
      out.key_prefix += "h/local" + std::to_string(layout.host_index) + "/";
      break;
    case World::kCross:
      // Numbered by host: on a homogeneous layout every host has this
      // local rank.
      out.rank = layout.host_index;
      out.size = layout.host_count;
      out.key_prefix += "h/cross" + std::to_string(layout.local_rank) + "/";
      break;
    case World::kFlat:
      out.local_rank = layout.local_rank;
      out.local_size = layout.local_size;
      out.cross_rank = layout.cross_rank;
      out.cross_size = layout.cross_size;
      out.key_prefix += "h/flat/";
      break;
  }
  return out;
}

Result<std::unique_ptr<Transport>> create(const TransportContext& context, const Layout& layout) {
  HVD_RETURN_IF_ERROR(check_homogeneous(layout));
  // Every rank connects the three worlds in the same order.
  auto local_transport = shm::create(sub_world(context, layout, World::kLocal));
  if (!local_transport.is_ok()) return local_transport.status();
  auto cross = gloo::create(sub_world(context, layout, World::kCross));
  if (!cross.is_ok()) return cross.status();
  auto flat = gloo::create(sub_world(context, layout, World::kFlat));
  if (!flat.is_ok()) return flat.status();
  return std::unique_ptr<Transport>(std::make_unique<HierarchicalTransport>(
      std::move(local_transport).value(), std::move(cross).value(), std::move(flat).value()));
}

Result<std::unique_ptr<Transport>> create(const TransportContext& context) {
  auto layout = exchange_layout(context);
  if (!layout.is_ok()) return layout.status();
  return create(context, *layout);
}

}  // namespace hvd::transports::hierarchical
