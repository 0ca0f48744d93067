// The one table of hvd's transports (docs/transports.md, "Adding a
// transport"): which exist, for which device (CPU or CUDA tensors), how each
// is made — a built-in factory, or the file name of a plugin library loaded
// when first used (transports/plugin/) — and what "auto" picks. Every other
// place reads it: the registry (builtin_registry), the CPU "auto" choice
// (its candidates, in table order), the GPU transport choice and the
// setting values it allows (runtime/gpu_transport.h), the launcher's check
// of the settings and their --help text, hvdrun --check-build's plugins, and
// the C ABI's answer whether the default CUDA plugin is built.
//
// What "auto" picks:
//  - HVD_CPU_TRANSPORT=auto: the first CPU row whose auto_fits holds for the
//    world's layout (auto_select.h);
//  - HVD_GPU_TRANSPORT=auto: the first CUDA row, which is also the default
//    of HVD_GPU_STAGING_PLUGIN (config/settings_table.cc; a unit test
//    checks that the settings' defaults come from here).
// A CPU row with stages_cuda is a choice for CUDA tensors as well: staged
// through pinned host memory to the CPU transport "auto" picks
// (HVD_GPU_TRANSPORT=gloo, Horovod's HOROVOD_GPU_OPERATIONS=gloo).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transports/auto_select.h"
#include "transports/layout.h"
#include "transports/plugin/known_plugins.h"
#include "transports/registry.h"

namespace hvd::transports {

struct TransportRow {
  std::string_view name;
  DeviceKind device;
  // Built in: makes the transport for one world. Null for a plugin.
  Result<std::unique_ptr<Transport>> (*make)(const TransportContext& context) = nullptr;
  // A plugin: its library's file name, looked for beside libhvd.so (or
  // hvdrun) and in ../lib from there (known_plugins.h). Empty when built in.
  std::string_view plugin_library = {};
  // CPU "auto": whether it serves a world of this layout (null: "auto" never
  // picks it; a row that serves any layout returns fits with an empty why),
  // and how "auto" makes it once the layout is known (null: `make`).
  AutoFit (*auto_fits)(const Layout& layout) = nullptr;
  Result<std::unique_ptr<Transport>> (*make_for_layout)(const TransportContext& context,
                                                        const Layout& layout) = nullptr;
  // Also a choice for CUDA tensors: staged through pinned host memory.
  bool stages_cuda = false;
  // Whether gloo may carry its data (hvd.gloo_enabled()).
  bool uses_gloo = false;
  // For --help and docs: after the name in the list of choices ("when every
  // rank of a set is on one host"), how "auto" describes it.
  std::string_view auto_help = {};
};

// Every row, in the order "auto" asks them.
std::span<const TransportRow> transport_table();

// The row named `name`, or null.
const TransportRow* find_transport(std::string_view name);

// A registry of every row plus "auto" (CPU). Plugin rows load their library
// only when first asked whether they can run or to make a transport.
TransportRegistry builtin_registry();
// The same plus `plugins` (the transport_plugins setting, parsed by
// plugin::parse_plugin_list; a name already registered is replaced: a
// user's own nccl build, say).
TransportRegistry registry_with_plugins(const std::vector<plugin::KnownPlugin>& plugins);

// The table's plugin rows as plugins to load (hvdrun --check-build).
std::vector<plugin::KnownPlugin> table_plugins();

// "auto" for CUDA tensors: the first CUDA row ("nccl"); the default of
// gpu_staging_plugin too.
std::string_view default_gpu_transport();
// The CPU row that is also a choice for CUDA tensors, staged ("gloo").
std::string_view staged_gpu_transport();
// What gpu_transport may be, in the order messages list them: "auto", the
// staged one, then `registry`'s CUDA transports ("auto, gloo, nccl").
std::vector<std::string> gpu_transport_choices(const TransportRegistry& registry);

// Whether gloo may carry the data of cpu_transport `name` ("auto" may pick
// it; an unknown name is taken to).
bool gloo_may_carry(std::string_view name);

// The choices a transport setting offers, for --help: for cpu_transport
// "auto (shm when every rank of a set is on one host, ...), gloo, shm,
// hierarchical"; gpu_transport and gpu_staging_plugin likewise; "" for any
// other setting key.
std::string setting_choices(std::string_view key);

}  // namespace hvd::transports
