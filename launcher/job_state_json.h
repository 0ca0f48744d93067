// hvdrun's /state.json, which the live job page (job_page.html) polls:
// the job's state (JobMonitor) and, per rank, the totals the page turns
// into rates (allreduce ops and bytes, the elastic commit). JSON written
// by hand; strings escaped.
#pragma once

#include <map>
#include <string>

#include "daemon/rendezvous/rank_stats.h"
#include "launcher/job_monitor.h"

namespace hvd::launcher {

std::string render_job_state_json(const JobMonitor::Snapshot& job,
                                  const std::map<int, daemon::RankStats::Report>& ranks);

// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace hvd::launcher
