// hvdrun's /metrics page in Prometheus' text format (docs/metrics.md lists
// every metric): the job's state from JobMonitor, and each worker's op
// counters from its last heartbeat (daemon/rendezvous/rank_stats.h). Names
// are hvd_* with their unit; labels rank, host, op (and process_set, state,
// cause). No token or credential ever appears in a label or value.
#pragma once

#include <map>
#include <string>

#include "daemon/rendezvous/rank_stats.h"
#include "launcher/job_monitor.h"

namespace hvd::launcher {

std::string render_job_metrics(const JobMonitor::Snapshot& job,
                               const std::map<int, daemon::RankStats::Report>& ranks,
                               daemon::RankStats::Clock::time_point now);

}  // namespace hvd::launcher
