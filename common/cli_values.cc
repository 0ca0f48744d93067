#include "common/cli_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hvd::common {

std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

CliExit usage_error(std::string_view program, int code, std::string_view message) {
  return {code, "", std::string(program) + ": error: " + one_line(message) + "\n"};
}

std::optional<int> parse_decimal(std::string_view text) {
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
  int value = 0;
  if (!digits) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int> parse_port(std::string_view text, int lowest) {
  auto port = parse_decimal(text);
  if (!port || *port < lowest || *port > 65535) return std::nullopt;
  return port;
}

}  // namespace hvd::common
