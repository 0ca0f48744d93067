#include "config/settings_table.h"

#include <array>

namespace hvd::config {

namespace {

// Keep config/hvd.yaml in step: a unit test checks that it lists every key
// below with its default.
constexpr std::array kSettings = {
    SettingSpec{"log_level", "HVD_LOG_LEVEL", "HOROVOD_LOG_LEVEL", SettingType::kLogLevel,
                "warning", "Log level of hvdrun and the workers' runtime"},
    SettingSpec{"start_timeout", "HVD_START_TIMEOUT", "HOROVOD_START_TIMEOUT",
                SettingType::kPositiveInt, "30",
                "Seconds the rendezvous waits, from the first rank's init, for every rank"},
    SettingSpec{"transport_timeout", "HVD_TRANSPORT_TIMEOUT_SECONDS",
                "HOROVOD_GLOO_TIMEOUT_SECONDS", SettingType::kPositiveInt, "30",
                "Seconds a transport connect or collective may block before it fails"},
    SettingSpec{"cpu_transport", "HVD_CPU_TRANSPORT", "", SettingType::kString, "gloo",
                "Transport for CPU tensors (registered: gloo)"},
    SettingSpec{"terminate_grace", "HVD_TERMINATE_GRACE_SECONDS", "", SettingType::kPositiveInt,
                "5", "Seconds between SIGTERM and SIGKILL when workers are terminated"},
};

}  // namespace

std::span<const SettingSpec> all_settings() { return kSettings; }

const SettingSpec* find_setting(std::string_view key) {
  for (const auto& s : kSettings) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace hvd::config
