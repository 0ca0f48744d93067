// `hvdrun --check-build`, like `horovodrun --check-build`: what this build
// of hvd can do on this machine. The version, the ABIs, the frameworks, every
// registered transport with its device and whether it can run here (the
// reason when not), the transport plugins found or why not, and features.
#pragma once

#include <string>

#include "transports/plugin/known_plugins.h"
#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::launcher {

// The report, many lines; `version` is hvd's; `extra_plugins` those of
// the transport_plugins setting (listed after the transport table's);
// `gpu_transport` the setting's value.
std::string check_build_report(
    const transports::TransportRegistry& registry, const std::string& version,
    const std::vector<transports::plugin::KnownPlugin>& extra_plugins = {},
    const std::string& gpu_transport = "auto");

}  // namespace hvd::launcher
