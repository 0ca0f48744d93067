#include "config/settings.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <stdexcept>

#include "common/logging.h"

namespace hvd::config {

using common::invalid_argument;

Status validate_setting(const SettingSpec& spec, std::string_view value, std::string_view source) {
  switch (spec.type) {
    case SettingType::kString:
      if (value.empty()) {
        return invalid_argument(std::string(source) + ": empty value for " + std::string(spec.key));
      }
      return Status::ok();
    case SettingType::kPositiveInt: {
      int64_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size() || n <= 0) {
        return invalid_argument(std::string(source) + ": '" + std::string(value) +
                                "' is not a whole number greater than 0");
      }
      return Status::ok();
    }
    case SettingType::kLogLevel: {
      auto level = common::parse_log_level(value);
      if (!level.is_ok()) return level.status().with_context(source);
      return Status::ok();
    }
  }
  return Status::ok();
}

Settings::Settings() {
  for (const auto& spec : all_settings()) values_[std::string(spec.key)] = std::string(spec.default_value);
}

Status Settings::set(std::string_view key, std::string_view value, std::string_view source) {
  const SettingSpec* spec = find_setting(key);
  if (spec == nullptr) {
    return invalid_argument(std::string(source) + ": unknown setting '" + std::string(key) + "'");
  }
  HVD_RETURN_IF_ERROR(validate_setting(*spec, value, source));
  values_[std::string(key)] = std::string(value);
  return Status::ok();
}

Status Settings::apply_environment(const std::function<const char*(const char*)>& lookup) {
  for (const auto& spec : all_settings()) {
    std::string name(spec.env);
    const char* value = lookup(name.c_str());
    if (value == nullptr && !spec.horovod_env.empty()) {
      name = std::string(spec.horovod_env);
      value = lookup(name.c_str());
    }
    if (value != nullptr) HVD_RETURN_IF_ERROR(set(spec.key, value, name));
  }
  return Status::ok();
}

Status Settings::apply_config_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return invalid_argument("config file '" + path + "' cannot be read");
  } catch (const YAML::Exception& e) {
    return invalid_argument("config file '" + path + "': " + e.what());
  }
  if (root.IsNull()) return Status::ok();  // an empty file sets nothing
  if (!root.IsMap()) return invalid_argument("config file '" + path + "': expected 'key: value' lines");
  for (const auto& item : root) {
    std::string key = item.first.as<std::string>();
    if (!item.second.IsScalar()) {
      return invalid_argument("config file '" + path + "': value of '" + key + "' is not a scalar");
    }
    HVD_RETURN_IF_ERROR(set(key, item.second.as<std::string>(), "config file '" + path + "', " + key));
  }
  return Status::ok();
}

const std::string& Settings::get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("no setting named " + std::string(key));
  return it->second;
}

int64_t Settings::get_int(std::string_view key) const {
  const std::string& text = get(key);
  int64_t n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);  // validated on set
  return n;
}

std::map<std::string, std::string> Settings::to_environment() const {
  std::map<std::string, std::string> env;
  for (const auto& spec : all_settings()) env[std::string(spec.env)] = get(spec.key);
  return env;
}

}  // namespace hvd::config
