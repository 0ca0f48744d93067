#include "runtime/gpu_transport.h"

#include <utility>
#include <vector>

namespace hvd::runtime {

namespace {

using transports::DeviceKind;

constexpr const char* kAuto = "auto";
constexpr const char* kStaged = "gloo";
constexpr const char* kDefaultGpu = "nccl";

}  // namespace

common::Result<GpuTransportChoice> GpuTransportChoice::parse(
    const std::string& setting, const transports::TransportRegistry& registry) {
  std::vector<std::string> cuda = registry.names(DeviceKind::kCuda);
  if (setting == kAuto || setting == kStaged) return GpuTransportChoice(setting);
  for (const auto& name : cuda) {
    if (name == setting) return GpuTransportChoice(setting);
  }
  std::string choices = std::string(kAuto) + ", " + kStaged;
  for (const auto& name : cuda) choices += ", " + name;
  return common::invalid_argument("HVD_GPU_TRANSPORT (gpu_transport) '" + setting +
                                  "' is not a transport for CUDA tensors; choose one of: " +
                                  choices);
}

common::Result<std::unique_ptr<transports::Transport>> GpuTransportChoice::connect(
    const transports::TransportRegistry& registry,
    const transports::TransportContext& context) const {
  const std::string prefix = "HVD_GPU_TRANSPORT=" + setting_;
  if (setting_ == kStaged) {
    return common::unimplemented(
        prefix + " cannot run here: staging CUDA tensors through host memory for the CPU "
                 "transport is not built yet (docs/gpu.md)");
  }
  const std::string name = setting_ == kAuto ? kDefaultGpu : setting_;
  transports::Availability here = registry.availability(name);
  if (!here.available) {
    return common::failed_precondition(
        prefix + " cannot run here: " + (setting_ == kAuto ? name + ": " : "") + here.reason);
  }
  auto transport = registry.create(DeviceKind::kCuda, name, context);
  if (!transport.is_ok()) return transport.status().with_context(prefix);
  return transport;
}

}  // namespace hvd::runtime
