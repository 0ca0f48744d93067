// hvdrun's flags of the settings table and horovodrun's (cli_groups.h:
// SettingArgs).
#include <algorithm>

#include "launcher/cli_groups.h"
#include "transports/table/transport_table.h"

namespace hvd::launcher::cli {

namespace {

const char* value_name(config::SettingType type) {
  switch (type) {
    case config::SettingType::kPositiveInt:
    case config::SettingType::kCount: return "N";
    case config::SettingType::kNumber: return "NUMBER";
    case config::SettingType::kByteSize: return "BYTES";
    case config::SettingType::kOptionalText: return "TEXT";
    case config::SettingType::kLogLevel: return "LEVEL";
    case config::SettingType::kString: return "TEXT";
    case config::SettingType::kBool: return "";
  }
  return "TEXT";
}

std::string flag_for(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

void SettingArgs::add_to(CLI::App& app) {
  for (const auto& spec : config::all_settings()) {
    // The transport settings' choices: the transport table's.
    std::string help = std::string(spec.help) + transports::setting_choices(spec.key) + " [env " +
                       std::string(spec.env) + ", default " + std::string(spec.default_value) +
                       "]";
    std::string& value = values[std::string(spec.key)];
    // A boolean is a bare flag (--autotune), or --autotune=false.
    const std::string names = flag_for(spec.key) + HorovodrunFlags::alias_of(spec.key);
    auto* opt = spec.type == config::SettingType::kBool
                    ? app.add_flag(names, value, help)
                    : app.add_option(names, value, help)->type_name(value_name(spec.type));
    flags.emplace_back(&spec, opt);
  }
  horovodrun.add_to(app);
}

common::Status SettingArgs::apply(const std::string& config_file, const EnvLookup& lookup,
                                  LaunchOptions& options) const {
  if (!config_file.empty()) {
    if (common::Status s = options.settings.apply_config_file(config_file); !s.is_ok()) return s;
  }
  if (common::Status s = options.settings.apply_environment(lookup); !s.is_ok()) return s;
  // horovodrun's flags, then hvdrun's own (which win when both are given).
  if (common::Status s = horovodrun.apply(options.settings, options.warnings); !s.is_ok()) {
    return s;
  }
  for (const auto& [spec, opt] : flags) {
    if (opt->count() == 0) continue;
    common::Status s = options.settings.set(spec->key, values.at(std::string(spec->key)),
                                            flag_for(spec->key));
    if (!s.is_ok()) return s;
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher::cli
