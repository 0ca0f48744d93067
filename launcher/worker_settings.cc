#include "launcher/worker_settings.h"

#include <algorithm>

#include "common/printable.h"
#include "transports/plugin/known_plugins.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::launcher {

namespace {

using transports::DeviceKind;
using ExtraEnv = std::vector<std::pair<std::string, std::string>>;

// The last -x entry named `name`, or nullptr.
const std::pair<std::string, std::string>* last_named(const ExtraEnv& extra,
                                                      std::string_view name) {
  const std::pair<std::string, std::string>* found = nullptr;
  for (const auto& entry : extra) {
    if (!name.empty() && entry.first == name) found = &entry;
  }
  return found;
}

// OK when the setting's value is one of `allowed`.
common::Status one_of(const config::Settings& settings, const std::string& key,
                      const std::string& kind, const std::vector<std::string>& allowed) {
  const std::string& value = settings.get(key);
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) {
    return common::Status::ok();
  }
  std::string list;
  for (const auto& name : allowed) list += (list.empty() ? "" : ", ") + name;
  return common::invalid_argument(std::string(settings.source_of(key)) + ": '" +
                                  common::printable(value) + "' is not " + kind +
                                  "; choose one of: " + list);
}

common::Status check_transports(const config::Settings& settings) {
  auto plugins = transports::plugin::parse_plugin_list(settings.get("transport_plugins"));
  if (!plugins.is_ok()) {
    return plugins.status().with_context(settings.source_of("transport_plugins"));
  }
  const auto registry = transports::registry_with_plugins(plugins.value());
  const std::vector<std::string> cuda = registry.names(DeviceKind::kCuda);
  if (const std::string& cpu = settings.get("cpu_transport");
      std::find(cuda.begin(), cuda.end(), cpu) != cuda.end()) {
    return common::invalid_argument(std::string(settings.source_of("cpu_transport")) +
                                    ": transport '" + cpu +
                                    "' is for cuda tensors, not cpu tensors (CUDA tensors go to "
                                    "the gpu_transport setting)");
  }
  HVD_RETURN_IF_ERROR(
      one_of(settings, "cpu_transport", "a CPU transport", registry.names(DeviceKind::kCpu)));
  // auto, the staged one ("gloo": through host memory, docs/gpu.md), the
  // CUDA transports (the transport table's and the plugins').
  HVD_RETURN_IF_ERROR(one_of(settings, "gpu_transport", "a transport for CUDA tensors",
                             transports::gpu_transport_choices(registry)));
  return one_of(settings, "gpu_staging_plugin", "a CUDA transport plugin", cuda);
}

}  // namespace

common::Status check_worker_settings(const config::Settings& settings, const ExtraEnv& extra_env) {
  config::Settings workers = settings;
  for (const auto& spec : config::all_settings()) {
    const auto* given = last_named(extra_env, spec.env);
    if (given == nullptr) given = last_named(extra_env, spec.horovod_env);
    if (given == nullptr) continue;
    HVD_RETURN_IF_ERROR(workers.set(spec.key, given->second, "-x " + given->first));
  }
  return check_transports(workers);
}

}  // namespace hvd::launcher
