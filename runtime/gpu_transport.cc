#include "runtime/gpu_transport.h"

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/gpu_hierarchical.h"
#include "transports/auto_select.h"
#include "transports/hierarchical/device_hierarchical.h"
#include "transports/hierarchical/factory.h"
#include "transports/staging/staged_transport.h"
#include "transports/table/transport_table.h"

namespace hvd::runtime {

namespace {

using transports::DeviceKind;
using transports::kAutoTransport;

bool contains(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

using TransportMade = common::Result<std::unique_ptr<transports::Transport>>;
using TransportMaker = std::function<TransportMade(std::shared_ptr<transports::DeviceWork>)>;

// The device work of `plugin` for context.device, then the transport that
// `make` connects over it. The device work first: it needs no peers, so a
// plugin without it fails every rank alike before any of them connects.
common::Result<transports::DeviceLink> open_link(const transports::TransportRegistry& registry,
                                                 const std::string& plugin,
                                                 const transports::TransportContext& context,
                                                 const std::string& prefix,
                                                 const TransportMaker& make) {
  auto work = registry.open_device(plugin, context.device, context.timeout);
  if (!work.is_ok()) return work.status().with_context(prefix);
  transports::DeviceLink link;
  link.work = std::shared_ptr<transports::DeviceWork>(std::move(work).value());
  auto transport = make(link.work);
  if (!transport.is_ok()) return transport.status().with_context(prefix);
  link.transport = std::move(transport).value();
  return link;
}

}  // namespace

common::Result<GpuTransportChoice> GpuTransportChoice::parse(
    const std::string& setting, const transports::TransportRegistry& registry,
    const std::string& staging_plugin, bool hierarchical, size_t staging_chunk) {
  std::vector<std::string> cuda = registry.names(DeviceKind::kCuda);
  std::string cuda_list;
  for (const auto& name : cuda) cuda_list += ", " + name;
  if (!contains(cuda, staging_plugin)) {
    return common::invalid_argument("HVD_GPU_STAGING_PLUGIN (gpu_staging_plugin) '" +
                                    staging_plugin + "' is not a CUDA transport plugin; choose "
                                    "one of: " + cuda_list.substr(cuda_list.empty() ? 0 : 2));
  }
  const std::vector<std::string> choices = transports::gpu_transport_choices(registry);
  if (contains(choices, setting)) {
    return GpuTransportChoice(setting, staging_plugin, hierarchical, staging_chunk);
  }
  std::string choice_list;
  for (const auto& name : choices) choice_list += (choice_list.empty() ? "" : ", ") + name;
  return common::invalid_argument("HVD_GPU_TRANSPORT (gpu_transport) '" + setting +
                                  "' is not a transport for CUDA tensors; choose one of: " +
                                  choice_list);
}

common::Result<transports::DeviceLink> GpuTransportChoice::connect_staged(
    const transports::TransportRegistry& registry,
    const transports::TransportContext& context) const {
  const std::string prefix = "HVD_GPU_TRANSPORT=" + setting_;
  transports::Availability here = registry.availability(staging_plugin_);
  if (!here.available) {
    return common::failed_precondition(prefix + " cannot run here: staging needs the device "
                                       "functions of '" + staging_plugin_ +
                                       "' (HVD_GPU_STAGING_PLUGIN): " + here.reason);
  }
  return open_link(registry, staging_plugin_, context, prefix,
                   [&](std::shared_ptr<transports::DeviceWork> work) -> TransportMade {
    // Hierarchical: the CPU hierarchical transport (shm within each host,
    // gloo across), staged like gloo.
    std::optional<transports::Layout> layout;
    if (hierarchical_) {
      auto found = hierarchical_layout(
          context, "staged through host memory to the CPU hierarchical transport",
          "staged gloo");
      if (!found.is_ok()) return found.status();
      layout = std::move(found).value();
    }
    // Otherwise the best CPU transport for where the set's ranks sit
    // ("auto": shm on one host, hierarchical across equal hosts, gloo).
    auto cpu = layout ? transports::hierarchical::create(context, *layout)
                      : registry.create(DeviceKind::kCpu, kAutoTransport, context);
    if (!cpu.is_ok()) return cpu.status();
    if (!layout && context.rank == 0) {
      spdlog::info("CUDA tensors of this process set are staged through pinned host memory to "
                   "the CPU transport {} ({}: the best one for where its ranks sit)",
                   cpu.value()->name(), prefix);
    }
    return std::unique_ptr<transports::Transport>(
        std::make_unique<transports::staging::StagedTransport>(std::move(cpu).value(),
                                                               std::move(work), staging_chunk_));
  });
}

common::Result<transports::DeviceLink> GpuTransportChoice::connect(
    const transports::TransportRegistry& registry,
    const transports::TransportContext& context) const {
  if (setting_ == transports::staged_gpu_transport()) return connect_staged(registry, context);
  const std::string prefix = "HVD_GPU_TRANSPORT=" + setting_;
  const bool automatic = setting_ == kAutoTransport;
  const std::string name =
      automatic ? std::string(transports::default_gpu_transport()) : setting_;
  transports::Availability here = registry.availability(name);
  if (!here.available) {
    return common::failed_precondition(prefix + " cannot run here: " +
                                       (automatic ? name + ": " : "") + here.reason);
  }
  return open_link(registry, name, context, prefix,
                   [&](std::shared_ptr<transports::DeviceWork> work) -> TransportMade {
    auto flat = [&](const transports::TransportContext& world) {
      return registry.create(DeviceKind::kCuda, name, world);
    };
    if (!hierarchical_) return flat(context);
    auto layout = hierarchical_layout(context, name + " within each host, gloo across", name);
    if (!layout.is_ok()) return layout.status();
    if (!layout->has_value()) return flat(context);
    return transports::hierarchical::create_device(context, **layout, flat, name,
                                                   std::move(work));
  });
}

}  // namespace hvd::runtime
