// The settings every worker will read, checked by hvdrun before it launches
// anything (a bad value used to be accepted and to fail every worker in
// hvd_init()): hvdrun's own (config file < environment < flags) with the -x
// entries that name a setting over them (-x HVD_CPU_TRANSPORT=shm, or a
// HOROVOD_* alias when its HVD_* name is not given too, as
// launcher/worker_environment.cc hands them), each value against its type; then the
// settings whose values name transports (cpu_transport, gpu_transport,
// gpu_staging_plugin) and transport_plugins against the registry every
// worker builds: the built-in transports plus the plugins transport_plugins
// declares (their libraries are not loaded here).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/settings.h"

namespace hvd::launcher {

// kInvalidArgument, one line naming where the value came from:
// "--cpu-transport: 'foo' is not a CPU transport; choose one of: auto, gloo,
// hierarchical, shm" (or HVD_CPU_TRANSPORT, -x HVD_CPU_TRANSPORT, the
// config file and key).
common::Status check_worker_settings(
    const config::Settings& settings,
    const std::vector<std::pair<std::string, std::string>>& extra_env);

}  // namespace hvd::launcher
