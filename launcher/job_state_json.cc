#include "launcher/job_state_json.h"

#include <cstdio>

namespace hvd::launcher {

namespace {

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3f", v);
  return buffer;
}

std::string rank_json(const JobMonitor::Process& p,
                      const std::map<int, daemon::RankStats::Report>& ranks) {
  std::string out = "{\"rank\":" + std::to_string(p.id) + ",\"host\":" + json_string(p.host) +
                    ",\"state\":" + json_string(process_state_name(p.state));
  if (p.heartbeat_age_seconds) out += ",\"heartbeat_age\":" + number(*p.heartbeat_age_seconds);
  auto it = ranks.find(p.id);
  if (it != ranks.end()) {
    int64_t ops = 0, allreduce_ops = 0, allreduce_bytes = 0;
    for (const auto& op : it->second.stats.ops()) {
      ops += op.completed();
      if (op.op() == "allreduce") {
        allreduce_ops += op.completed();
        allreduce_bytes += op.bytes();
      }
    }
    out += ",\"ops\":" + std::to_string(ops) + ",\"allreduce_ops\":" +
           std::to_string(allreduce_ops) + ",\"allreduce_bytes\":" +
           std::to_string(allreduce_bytes);
    if (it->second.commit) out += ",\"commit\":" + std::to_string(*it->second.commit);
  }
  return out + "}";
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string render_job_state_json(const JobMonitor::Snapshot& job,
                                  const std::map<int, daemon::RankStats::Report>& ranks) {
  std::string out = "{\"elastic\":" + std::string(job.elastic ? "true" : "false") +
                    ",\"round\":" + std::to_string(job.round) +
                    ",\"size\":" + std::to_string(job.size) +
                    ",\"min_size\":" + std::to_string(job.min_size) +
                    ",\"max_size\":" + std::to_string(job.max_size) +
                    ",\"resets\":" + std::to_string(job.resets) +
                    ",\"uptime\":" + number(job.uptime_seconds) +
                    ",\"spares_promoted\":" + std::to_string(job.spares_promoted) +
                    ",\"spares_waiting\":[";
  for (size_t i = 0; i < job.spares_waiting.size(); ++i) {
    out += (i ? "," : "") + std::to_string(job.spares_waiting[i]);
  }
  out += "],\"blacklisted\":[";
  for (size_t i = 0; i < job.blacklisted.size(); ++i) {
    out += std::string(i ? "," : "") + "{\"host\":" + json_string(job.blacklisted[i].host) +
           ",\"seconds_left\":" + number(job.blacklisted[i].seconds_left) + "}";
  }
  out += "],\"failures\":{";
  bool first = true;
  for (const auto& [cause, n] : job.failures) {
    out += std::string(first ? "" : ",") + json_string(cause) + ":" + std::to_string(n);
    first = false;
  }
  out += "},\"events\":[";
  for (size_t i = 0; i < job.events.size(); ++i) {
    const auto& e = job.events[i];
    out += std::string(i ? "," : "") + "{\"time\":" + number(e.unix_seconds) +
           ",\"kind\":" + json_string(e.kind) + ",\"text\":" + json_string(e.text) + "}";
  }
  out += "],\"ranks\":[";
  for (size_t i = 0; i < job.processes.size(); ++i) {
    out += (i ? "," : "") + rank_json(job.processes[i], ranks);
  }
  return out + "]}";
}

}  // namespace hvd::launcher
