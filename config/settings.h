// Resolved values of the settings table, built up in layers. Precedence:
// command line > environment > config file > default; each apply_* call
// overrides what earlier calls set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"
#include "config/settings_table.h"

namespace hvd::config {

using common::Result;
using common::Status;

// Checks a value against its type; the error names the value and where it came from.
Status validate_setting(const SettingSpec& spec, std::string_view value, std::string_view source);

class Settings {
 public:
  // Every setting at its default.
  Settings();

  // A YAML mapping of key: value (see config/hvd.yaml), a regular file or a
  // pipe read within 30 s (common/input_file.h). Unknown keys, bad values and
  // a key given twice are errors naming the file, the key (and its lines) or
  // the value; nothing of such a file is applied.
  Status apply_config_file(const std::string& path);

  // HVD_* names, then their HOROVOD_* aliases where the HVD_ name is unset.
  Status apply_environment(const std::function<const char*(const char*)>& lookup);

  // One value from `source` ("--start-timeout", "HVD_START_TIMEOUT", ...).
  Status set(std::string_view key, std::string_view value, std::string_view source);

  const std::string& get(std::string_view key) const;
  // Where the value came from: the `source` of the set() that gave it
  // ("--cpu-transport", "HVD_CPU_TRANSPORT", "config file 'f', cpu_transport"),
  // or "the default".
  std::string_view source_of(std::string_view key) const;
  int64_t get_int(std::string_view key) const;  // kPositiveInt, kCount, kByteSize (bytes)
  double get_double(std::string_view key) const;  // kNumber
  bool get_bool(std::string_view key) const;      // kBool

  // HVD_* variable -> value for every setting, to hand to workers.
  std::map<std::string, std::string> to_environment() const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> sources_;
};

}  // namespace hvd::config
