// Builds a plugin's hvd_plugin_world from a TransportContext: its placement
// (the one conversion of common::Placement to the ABI's C struct, which has
// no host), and the store as C callbacks over common::Store (the store must
// outlive the plugin's create() call, which is all a plugin may use it for).
#pragma once

#include "transports/plugin/transport_plugin.h"
#include "transports/registry.h"

namespace hvd::transports::plugin {

// Points into `context` (its key_prefix and store): keep it alive while the
// world is used.
hvd_plugin_world make_world(const TransportContext& context);

// Copies `status` into a plugin status (the message cut to fit).
void to_plugin_status(const Status& status, hvd_plugin_status* out);

// A plugin status as a Status; `what` names the plugin and the call.
Status from_plugin_status(int32_t code, const hvd_plugin_status& status, std::string_view what);

}  // namespace hvd::transports::plugin
