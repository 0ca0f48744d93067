#include "proto/refusal_log.h"

#include <spdlog/spdlog.h>

namespace hvd::proto {

std::optional<std::string> RefusalLog::admit(const std::string& text, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (last_ && now - *last_ < interval_) {
    ++hidden_;
    return std::nullopt;
  }
  std::string line = text;
  if (hidden_ > 0) {
    line += " (" + std::to_string(hidden_) + " more refused call" + (hidden_ == 1 ? "" : "s") +
            " not shown since the last line)";
  }
  last_ = now;
  hidden_ = 0;
  return line;
}

void log_refusal(const std::string& text) {
  static RefusalLog log(std::chrono::seconds(10));
  if (auto line = log.admit(text, RefusalLog::Clock::now())) spdlog::warn("{}", *line);
}

}  // namespace hvd::proto
