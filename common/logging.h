// Process-wide logging through spdlog. Lines look like
//   [2026-11-21 13:00:00.123] [warning] [1@host] message
// where "1@host" is the prefix given to init_logging (rank@host in workers,
// "hvdrun" in the launcher). Library code logs through these helpers only.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::common {

// Parses trace|debug|info|warning|warn|error|fatal|critical|off (any case).
Result<spdlog::level::level_enum> parse_log_level(std::string_view text);

// (Re)configures the default logger: stderr sink, the prefix, the level.
void init_logging(const std::string& prefix, spdlog::level::level_enum level);

}  // namespace hvd::common
