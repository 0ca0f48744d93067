#include "config/settings.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/input_file.h"
#include "common/logging.h"
#include "common/printable.h"

namespace hvd::config {

using common::invalid_argument;
using common::printable;

namespace {

bool parse_whole(std::string_view text, int64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "64MiB" -> 67108864; nullopt when malformed. Suffixes are powers of 1024.
std::optional<int64_t> parse_byte_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  int64_t n = 0;
  if (digits == 0 || !parse_whole(text.substr(0, digits), n)) return std::nullopt;
  std::string suffix(text.substr(digits));
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  int shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kib" || suffix == "kb") shift = 10;
  else if (suffix == "m" || suffix == "mib" || suffix == "mb") shift = 20;
  else if (suffix == "g" || suffix == "gib" || suffix == "gb") shift = 30;
  else return std::nullopt;
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return std::nullopt;
  return n << shift;
}

// "yes" -> true; nullopt when not a boolean word.
std::optional<bool> parse_bool(std::string_view text) {
  std::string word(text);
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (word == "1" || word == "true" || word == "yes" || word == "on") return true;
  if (word == "0" || word == "false" || word == "no" || word == "off") return false;
  return std::nullopt;
}

}  // namespace

Status validate_setting(const SettingSpec& spec, std::string_view value, std::string_view source) {
  auto bad = [&](std::string_view expected) {
    return invalid_argument(std::string(source) + ": '" + printable(value) + "' is not " +
                            std::string(expected));
  };
  int64_t n = 0;
  switch (spec.type) {
    case SettingType::kString:
      if (value.empty()) {
        return invalid_argument(std::string(source) + ": empty value for " + std::string(spec.key));
      }
      return Status::ok();
    case SettingType::kOptionalText:
      return Status::ok();
    case SettingType::kPositiveInt:
      if (!parse_whole(value, n) || n <= 0) return bad("a whole number greater than 0");
      return Status::ok();
    case SettingType::kCount:
      if (!parse_whole(value, n) || n < 0) return bad("a whole number (0 or more)");
      return Status::ok();
    case SettingType::kNumber: {
      std::string text(value);
      char* end = nullptr;
      double d = text.empty() ? 0 : std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !(d > 0) || !std::isfinite(d)) {
        return bad("a number greater than 0");
      }
      return Status::ok();
    }
    case SettingType::kByteSize:
      if (!parse_byte_size(value)) return bad("a size in bytes (e.g. 67108864, 64MiB, 512K)");
      return Status::ok();
    case SettingType::kBool:
      if (!parse_bool(value)) return bad("a boolean (true/false, 1/0, yes/no, on/off)");
      return Status::ok();
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
    return invalid_argument(std::string(source) + ": unknown setting '" + printable(key) + "'");
  }
  HVD_RETURN_IF_ERROR(validate_setting(*spec, value, source));
  // Sizes are kept in bytes and booleans as true/false, so workers and the
  // getters see one spelling.
  std::string stored(value);
  if (spec->type == SettingType::kByteSize) stored = std::to_string(*parse_byte_size(value));
  if (spec->type == SettingType::kBool) stored = *parse_bool(value) ? "true" : "false";
  values_[std::string(key)] = std::move(stored);
  sources_[std::string(key)] = std::string(source);
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
  const std::string where = "config file '" + printable(path) + "'";
  common::InputRules rules;
  rules.what = "config file";
  rules.allow_pipe = true;  // --config-file <(...)
  auto text = common::read_input_file(path, rules);
  if (!text.is_ok()) {
    if (text.status().code() == common::StatusCode::kNotFound) {
      return invalid_argument(where + " cannot be read");
    }
    return invalid_argument(text.status().message());
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return invalid_argument(where + ": " + printable(e.what()));
  }
  if (root.IsNull()) return Status::ok();  // an empty file sets nothing
  if (!root.IsMap()) return invalid_argument(where + ": expected 'key: value' lines");
  // Every key once (YAML keeps both of two equal keys, and the last would
  // win unseen); checked before anything is applied.
  std::unordered_map<std::string, int> lines;
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& item : root) {
    if (!item.first.IsScalar()) return invalid_argument(where + ": a key is not a name");
    std::string key = item.first.as<std::string>();
    const int line = item.first.Mark().line + 1;
    if (auto [it, fresh] = lines.emplace(key, line); !fresh) {
      return invalid_argument(where + ": key '" + printable(key) + "' on line " +
                              std::to_string(line) + " is given already on line " +
                              std::to_string(it->second));
    }
    if (!item.second.IsScalar()) {
      return invalid_argument(where + ": value of '" + printable(key) + "' is not a scalar");
    }
    items.emplace_back(std::move(key), item.second.as<std::string>());
  }
  // Checked as a whole too: a bad value leaves every setting as it was.
  Settings checked = *this;
  for (const auto& [key, value] : items) {
    HVD_RETURN_IF_ERROR(checked.set(key, value, where + ", " + printable(key)));
  }
  *this = std::move(checked);
  return Status::ok();
}

std::string_view Settings::source_of(std::string_view key) const {
  auto it = sources_.find(key);
  return it == sources_.end() ? std::string_view("the default") : std::string_view(it->second);
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

bool Settings::get_bool(std::string_view key) const { return get(key) == "true"; }

double Settings::get_double(std::string_view key) const {
  return std::strtod(get(key).c_str(), nullptr);  // validated on set
}

std::map<std::string, std::string> Settings::to_environment() const {
  std::map<std::string, std::string> env;
  for (const auto& spec : all_settings()) env[std::string(spec.env)] = get(spec.key);
  return env;
}

}  // namespace hvd::config
