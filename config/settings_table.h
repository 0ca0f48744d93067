// Every tunable of hvd, declared once: its config-file key, its environment
// name (plus the Horovod alias where Horovod has one), its type, default and
// documentation. hvdrun builds its tunable flags from this table, reads the
// config file against it and hands the resolved values to workers as HVD_*
// variables; the runtime reads the same variables through it.
#pragma once

#include <span>
#include <string_view>

namespace hvd::config {

enum class SettingType {
  kString,
  kPositiveInt,  // a whole number > 0
  kCount,        // a whole number >= 0
  kNumber,       // a decimal number > 0 (e.g. 0.5)
  kByteSize,     // bytes, optionally with K/KiB/M/MiB/G/GiB (x1024); stored as bytes
  kOptionalText, // any text, empty allowed (e.g. an optional file name)
  kLogLevel,     // trace|debug|info|warning|error|fatal|off
  kBool,         // true/false, 1/0, yes/no, on/off; stored as true or false; a bare CLI flag
};

struct SettingSpec {
  std::string_view key;          // config-file key; the CLI flag is --key with '_' -> '-'
  std::string_view env;          // HVD_... variable
  std::string_view horovod_env;  // HOROVOD_... alias, or empty
  SettingType type;
  std::string_view default_value;
  std::string_view help;
};

std::span<const SettingSpec> all_settings();

// nullptr when no setting has this key.
const SettingSpec* find_setting(std::string_view key);

}  // namespace hvd::config
