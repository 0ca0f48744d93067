#include "launcher/liveness_rule.h"

#include <cstdio>
#include <set>

#include "config/settings.h"

namespace hvd::launcher {

namespace {

std::string seconds(LivenessRule::Clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f",
                std::chrono::duration<double>(d).count());
  return text;
}

} // namespace

void LivenessRule::process_state(int process, bool stopped,
                                 Clock::time_point now) {
  if (!stopped) {
    stopped_since_.erase(process);
  } else {
    stopped_since_.try_emplace(process,
                               now); // the first sample of the stop counts
  }
}

void LivenessRule::forget(int process) {
  stopped_since_.erase(process);
  warned_.erase(process);
}

std::vector<LivenessRule::Finding>
LivenessRule::review(const std::vector<Late> &late, Clock::time_point now,
                     size_t watched) {
  std::vector<Finding> out;
  std::set<int> still_late;
  size_t over_timeout = 0;
  for (const Late &l : late) {
    if (limits_.timeout.count() != 0 && l.quiet > limits_.timeout)
      ++over_timeout;
  }
  const bool crowd = watched >= 4 && over_timeout * 2 > watched;
  const auto hung = crowd ? hung_limit() * kCrowdMultiple
                          : std::chrono::duration_cast<std::chrono::seconds>(
                                hung_limit());
  const std::string crowd_text =
      crowd ? ", x " + std::to_string(kCrowdMultiple) +
                  " while most of the job is late at once: hvdrun or its "
                  "host is starved"
            : "";
  for (const Late &l : late) {
    if (limits_.timeout.count() == 0 || l.quiet <= limits_.timeout)
      continue;
    still_late.insert(l.process);
    const auto stopped = stopped_since_.find(l.process);
    if (stopped != stopped_since_.end() &&
        now - stopped->second >= limits_.timeout) {
      out.push_back({l.process, true, l.quiet,
                     "no heartbeat for " +
                         std::to_string(limits_.timeout.count()) +
                         " s (its process is stopped, state T)"});
    } else if (l.quiet > hung) {
      out.push_back({l.process, true, l.quiet,
                     "no heartbeat for " + std::to_string(hung.count()) +
                         " s (the hung limit, HVD_HEARTBEAT_HUNG_MULTIPLE x "
                         "the heartbeat timeout" +
                         crowd_text + ", though its process runs)"});
    } else if (!warned_[l.process]) {
      warned_[l.process] = true;
      out.push_back(
          {l.process, false, l.quiet,
           "no heartbeat for " + seconds(l.quiet) + " s, but " +
               (stopped != stopped_since_.end()
                    ? std::string("its process was stopped only just (state T)")
                    : "its process runs (starved of CPU?); dead only at the "
                      "hung limit of " +
                          std::to_string(hung.count()) + " s" +
                          (crowd ? " (" + crowd_text.substr(2) + ")" : ""))});
    }
  }
  for (auto it = warned_.begin(); it != warned_.end();) {
    it = still_late.count(it->first) ? std::next(it) : warned_.erase(it);
  }
  return out;
}

std::vector<std::string> LivenessRule::warning_lines(
    const std::vector<std::pair<std::string, Finding>> &warnings) {
  constexpr size_t kOneEach = 3;
  std::vector<std::string> out;
  if (warnings.size() <= kOneEach) {
    for (const auto &[who, f] : warnings)
      out.push_back(who + ": " + f.text);
    return out;
  }
  std::string line = std::to_string(warnings.size()) + " late workers (";
  for (size_t i = 0; i < kOneEach; ++i)
    line += warnings[i].first + ", ";
  line += "and " + std::to_string(warnings.size() - kOneEach) +
          " more), e.g. " + warnings[0].first + ": " + warnings[0].second.text;
  out.push_back(std::move(line));
  return out;
}

std::string LivenessRule::death_message(
    const std::vector<std::pair<std::string, Finding>> &deaths) {
  constexpr size_t kOneEach = 3;
  std::string out;
  if (deaths.size() <= kOneEach) {
    for (const auto &[who, f] : deaths)
      out += (out.empty() ? "" : "; ") + who + " stopped responding: " + f.text;
    return out;
  }
  out = std::to_string(deaths.size()) + " workers stopped responding (";
  for (size_t i = 0; i < kOneEach; ++i)
    out += deaths[i].first + ", ";
  out += "and " + std::to_string(deaths.size() - kOneEach) + " more), e.g. " +
         deaths[0].first + ": " + deaths[0].second.text;
  return out;
}

LivenessRule::Limits liveness_limits(const config::Settings &settings) {
  return {std::chrono::seconds(settings.get_int("heartbeat_timeout_seconds")),
          static_cast<int>(settings.get_int("heartbeat_hung_multiple"))};
}

} // namespace hvd::launcher
