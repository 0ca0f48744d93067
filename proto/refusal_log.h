// Refused calls are logged without a flood of them flooding the log (issue
// 21: 5000 refused calls wrote 5000 lines): the first refusal of an
// interval is logged with its details, the others of the interval are
// counted, and the next line logged says how many were not shown.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace hvd::proto {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RefusalLog(std::chrono::milliseconds interval) : interval_(interval) {}

  // The line to log for this refusal (`text`, plus the count of refusals
  // not shown since the last line), or nullopt: counted, not shown.
  std::optional<std::string> admit(const std::string& text, Clock::time_point now);

 private:
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::optional<Clock::time_point> last_;
  int64_t hidden_ = 0;
};

// The process's refusal log (10 s interval): logs `text` at warning level
// when it admits it.
void log_refusal(const std::string& text);

}  // namespace hvd::proto
