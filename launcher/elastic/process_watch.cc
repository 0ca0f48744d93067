#include "launcher/elastic/process_watch.h"

namespace hvd::launcher::elastic {

void ProcessWatch::keep_only(const std::map<int, bool>& processes, Clock::time_point now) {
  std::erase_if(watched_, [&](const auto& entry) { return processes.count(entry.first) == 0; });
  for (const auto& [process, must_arrive] : processes) {
    auto [it, added] = watched_.try_emplace(process);
    if (added) it->second.started = now;
    it->second.must_arrive = must_arrive;
  }
}

void ProcessWatch::arrived(int process) {
  if (auto it = watched_.find(process); it != watched_.end()) it->second.arrived = true;
}

void ProcessWatch::state(int process, bool stopped, Clock::time_point now) {
  // A state change may come before keep_only() first sees the process.
  auto [it, added] = watched_.try_emplace(process);
  if (added) it->second.started = now;
  Watched& w = it->second;
  if (!stopped) {
    w.stopped_since.reset();
  } else if (!w.stopped_since) {
    w.stopped_since = now;
  }
}

std::vector<ProcessWatch::Overdue> ProcessWatch::overdue(Clock::time_point now) {
  std::vector<Overdue> out;
  for (auto& [process, w] : watched_) {
    if (w.reported) continue;
    if (limits_.stopped.count() > 0 && w.stopped_since &&
        now - *w.stopped_since >= limits_.stopped) {
      w.reported = true;
      out.push_back({process, true, limits_.stopped});
    } else if (limits_.start.count() > 0 && w.must_arrive && !w.arrived &&
               now - w.started >= limits_.start) {
      w.reported = true;
      out.push_back({process, false, limits_.start});
    }
  }
  return out;
}

}  // namespace hvd::launcher::elastic
