#include "transports/hierarchical/device_hierarchical.h"

#include <string>
#include <utility>

#include "transports/gloo/factory.h"
#include "transports/hierarchical/factory.h"
#include "transports/hierarchical/hierarchical_transport.h"
#include "transports/staging/staged_transport.h"

namespace hvd::transports::hierarchical {

Result<std::unique_ptr<Transport>> create_device(const TransportContext& context,
                                                 const Layout& layout,
                                                 const DeviceTransportFactory& device,
                                                 const std::string& device_name,
                                                 std::shared_ptr<DeviceWork> work) {
  HVD_RETURN_IF_ERROR(check_homogeneous(layout));
  // Every rank connects the three worlds in the same order.
  auto local = device(sub_world(context, layout, World::kLocal));
  if (!local.is_ok()) return local.status().with_context("the device world of this host");
  auto cross = gloo::create(sub_world(context, layout, World::kCross));
  if (!cross.is_ok()) return cross.status().with_context("the gloo world across the hosts");
  auto flat = device(sub_world(context, layout, World::kFlat));
  if (!flat.is_ok()) return flat.status().with_context("the device world of every rank");
  auto staged = std::make_unique<staging::StagedTransport>(std::move(cross).value(), work);
  return std::unique_ptr<Transport>(std::make_unique<HierarchicalTransport>(
      std::move(local).value(), std::move(staged), std::move(flat).value(), std::move(work),
      "hierarchical (" + device_name + " within hosts, gloo across)"));
}

}  // namespace hvd::transports::hierarchical
