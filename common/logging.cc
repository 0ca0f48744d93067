#include "common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cctype>

#include "common/printable.h"

namespace hvd::common {

Result<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  using L = spdlog::level::level_enum;
  if (t == "trace") return L::trace;
  if (t == "debug") return L::debug;
  if (t == "info") return L::info;
  if (t == "warning" || t == "warn") return L::warn;
  if (t == "error") return L::err;
  if (t == "fatal" || t == "critical") return L::critical;
  if (t == "off") return L::off;
  return invalid_argument("unknown log level '" + printable(text) +
                          "' (expected trace, debug, info, warning, error, fatal or off)");
}

void init_logging(const std::string& prefix, spdlog::level::level_enum level) {
  // Built directly (not through the registry) so a second call with the same
  // prefix (shutdown() then init()) replaces the logger instead of throwing.
  auto logger = std::make_shared<spdlog::logger>(
      "hvd:" + prefix, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] [" + prefix + "] %v");
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace hvd::common
