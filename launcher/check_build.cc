#include "launcher/check_build.h"

#include <sstream>
#include <vector>

#include "transports/plugin/known_plugins.h"
#include "transports/plugin/transport_plugin.h"
#include "transports/table/transport_table.h"

namespace hvd::launcher {

namespace {

const char* box(bool yes) { return yes ? "[X]" : "[ ]"; }

// Features of this build, always there (hvd has no optional CPU parts).
constexpr const char* kFeatures[] = {
    "elastic training (--min-np/--max-np, --host-discovery-script)",
    "timeline (HVD_TIMELINE, hvd.start_timeline)",
    "shared-memory transport for ranks on one host (HVD_CPU_TRANSPORT=shm)",
    "process sets",
    "Horovod compatibility (--horovod-compat, HOROVOD_* variables)",
};

void transports_section(std::ostringstream& out, const transports::TransportRegistry& registry) {
  out << "Available transports:\n";
  for (const auto& entry : registry.list()) {
    out << "    " << box(entry.availability.available) << ' ' << entry.name << " ("
        << transports::device_kind_name(entry.device) << ")";
    if (!entry.availability.available) out << ": cannot run here: " << entry.availability.reason;
    out << '\n';
  }
}

void plugins_section(std::ostringstream& out,
                     const std::vector<transports::plugin::KnownPlugin>& extra) {
  out << "Transport plugins:\n";
  std::vector<transports::plugin::KnownPlugin> all = transports::table_plugins();
  all.insert(all.end(), extra.begin(), extra.end());
  for (const auto& plugin : all) {
    auto report = transports::plugin::try_load(plugin);
    out << "    " << box(report.error.empty()) << ' ' << report.library << " (" << plugin.name
        << "): ";
    if (report.error.empty()) {
      out << "loaded from " << report.path << ", ABI version " << report.abi_version << '\n';
    } else {
      out << report.error << '\n';
    }
  }
}

}  // namespace

std::string check_build_report(const transports::TransportRegistry& registry,
                               const std::string& version,
                               const std::vector<transports::plugin::KnownPlugin>& extra_plugins,
                               const std::string& gpu_transport) {
  std::ostringstream out;
  out << "hvd v" << version << ":\n\n";
  out << "C ABI:\n"
      << "    libhvd.so C ABI (hvd/c_api.h) of hvd " << version << '\n'
      << "    transport plugin ABI version " << HVD_TRANSPORT_PLUGIN_ABI_VERSION
      << " (loads plugins of versions " << HVD_TRANSPORT_PLUGIN_ABI_OLDEST << " to "
      << HVD_TRANSPORT_PLUGIN_ABI_VERSION << ")\n\n";
  out << "Available frameworks (pure Python over libhvd.so, not probed here):\n"
      << "    [X] PyTorch (hvd.torch)\n"
      << "    [X] NumPy (hvd.numpy)\n\n";
  transports_section(out, registry);
  out << "    CUDA tensors go to HVD_GPU_TRANSPORT=" << gpu_transport << " (auto: "
      << transports::default_gpu_transport()
      << " when it can run; negotiation stays on the CPU transport)\n";
  out << '\n';
  plugins_section(out, extra_plugins);
  out << "\nAvailable features:\n";
  for (const char* feature : kFeatures) out << "    " << box(true) << ' ' << feature << '\n';
  out << "    " << box(false) << " MPI, ROCm, oneCCL (not supported)\n";
  return out.str();
}

}  // namespace hvd::launcher
