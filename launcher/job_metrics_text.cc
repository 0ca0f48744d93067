#include "launcher/job_metrics_text.h"

#include <array>

#include "common/prometheus_text.h"

namespace hvd::launcher {

namespace {

using common::MetricLabels;
using common::PrometheusText;

// Upper bounds of the latency buckets (runtime/engine/engine_stats.h's
// kLatencyBounds; the worker sends one cumulative count per bound and +Inf).
constexpr std::array<std::string_view, 14> kLatencyBounds = {
    "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01",  "0.025",  "0.05",    "0.1",    "0.25",  "1",      "5"};

std::string host_of(const JobMonitor::Snapshot& job, int rank) {
  for (const auto& p : job.processes) {
    if (p.id == rank) return p.host;
  }
  return "";
}

void job_metrics(PrometheusText& out, const JobMonitor::Snapshot& job) {
  out.family("hvd_job_size_ranks", "gauge", "Ranks in the job's current round (static: -np)");
  out.sample("hvd_job_size_ranks", {}, job.size);
  out.family("hvd_job_min_size_ranks", "gauge", "Fewest ranks the job runs with (--min-np)");
  out.sample("hvd_job_min_size_ranks", {}, job.min_size);
  out.family("hvd_job_max_size_ranks", "gauge", "Most ranks the job runs with (--max-np)");
  out.sample("hvd_job_max_size_ranks", {}, job.max_size);
  out.family("hvd_job_elastic", "gauge", "1 for an elastic job, else 0");
  out.sample("hvd_job_elastic", {}, job.elastic ? 1 : 0);
  out.family("hvd_job_round", "gauge", "The current rendezvous round (0 before the first)");
  out.sample("hvd_job_round", {}, static_cast<double>(job.round));
  out.family("hvd_job_resets_total", "counter", "Rounds formed after the first (elastic resets)");
  out.sample("hvd_job_resets_total", {}, static_cast<double>(job.resets));
  out.family("hvd_job_uptime_seconds", "gauge", "Seconds since hvdrun started the job");
  out.sample("hvd_job_uptime_seconds", {}, job.uptime_seconds);
  out.family("hvd_spares_waiting", "gauge", "Hot spares waiting in hvd.init() to be promoted");
  out.sample("hvd_spares_waiting", {}, static_cast<double>(job.spares_waiting.size()));
  out.family("hvd_spares_promoted_total", "counter",
             "Hot spares promoted into the slot of a failed worker");
  out.sample("hvd_spares_promoted_total", {}, static_cast<double>(job.spares_promoted));
  out.family("hvd_failures_total", "counter", "Worker failures by cause");
  for (std::string_view cause : {"exit_code", "signal", "agent_lost"}) {
    auto it = job.failures.find(std::string(cause));
    out.sample("hvd_failures_total", {{"cause", std::string(cause)}},
               static_cast<double>(it == job.failures.end() ? 0 : it->second));
  }
  out.family("hvd_host_blacklisted_seconds", "gauge",
             "Seconds left of a blacklisted host's cooldown (elastic jobs)");
  for (const auto& b : job.blacklisted) {
    out.sample("hvd_host_blacklisted_seconds", {{"host", b.host}}, b.seconds_left);
  }
}

void process_metrics(PrometheusText& out, const JobMonitor::Snapshot& job) {
  std::map<std::string, int> alive;
  out.family("hvd_rank_state", "gauge",
             "1 for the state each process is in (running, starting, spare, stopped, gone)");
  for (const auto& p : job.processes) {
    if (!alive.contains(p.host)) alive[p.host] = 0;
    if (p.state == ProcessState::kRunning) ++alive[p.host];
    out.sample("hvd_rank_state",
               {{"rank", std::to_string(p.id)},
                {"host", p.host},
                {"state", std::string(process_state_name(p.state))}},
               1);
  }
  out.family("hvd_host_ranks_alive", "gauge", "Running ranks per host");
  for (const auto& [host, n] : alive) out.sample("hvd_host_ranks_alive", {{"host", host}}, n);
  out.family("hvd_rank_heartbeat_age_seconds", "gauge",
             "Seconds since the rank's last heartbeat (ranks whose liveness is watched)");
  for (const auto& p : job.processes) {
    if (!p.heartbeat_age_seconds) continue;
    out.sample("hvd_rank_heartbeat_age_seconds", {{"rank", std::to_string(p.id)}, {"host", p.host}},
               *p.heartbeat_age_seconds);
  }
}

void rank_counters(PrometheusText& out, const JobMonitor::Snapshot& job,
                   const std::map<int, daemon::RankStats::Report>& ranks,
                   daemon::RankStats::Clock::time_point now) {
  auto labels = [&](int rank) {
    return MetricLabels{{"rank", std::to_string(rank)}, {"host", host_of(job, rank)}};
  };
  out.family("hvd_rank_ops_total", "counter", "Ops finished by the rank, by op and process set");
  for (const auto& [rank, r] : ranks) {
    for (const auto& op : r.stats.ops()) {
      MetricLabels l = labels(rank);
      l.push_back({"op", op.op()});
      l.push_back({"process_set", std::to_string(op.process_set())});
      out.sample("hvd_rank_ops_total", l, static_cast<double>(op.completed()));
    }
  }
  out.family("hvd_rank_op_bytes_total", "counter", "Input bytes of the ops the rank finished");
  for (const auto& [rank, r] : ranks) {
    for (const auto& op : r.stats.ops()) {
      MetricLabels l = labels(rank);
      l.push_back({"op", op.op()});
      l.push_back({"process_set", std::to_string(op.process_set())});
      out.sample("hvd_rank_op_bytes_total", l, static_cast<double>(op.bytes()));
    }
  }
  out.family("hvd_rank_fused_batches_total", "counter",
             "Allreduce calls of the rank that carried several tensors (tensor fusion)");
  for (const auto& [rank, r] : ranks) {
    out.sample("hvd_rank_fused_batches_total", labels(rank),
               static_cast<double>(r.stats.fused_batches()));
  }
  out.family("hvd_rank_fused_tensors_total", "counter", "Tensors carried in fused allreduce calls");
  for (const auto& [rank, r] : ranks) {
    out.sample("hvd_rank_fused_tensors_total", labels(rank),
               static_cast<double>(r.stats.fused_tensors()));
  }
  out.family("hvd_rank_stall_warnings_total", "counter",
             "Stall warnings of the rank's engines (tensors some ranks did not submit)");
  for (const auto& [rank, r] : ranks) {
    out.sample("hvd_rank_stall_warnings_total", labels(rank),
               static_cast<double>(r.stats.stall_warnings()));
  }
  out.family("hvd_rank_elastic_commits_total", "counter",
             "The job-wide number of the last elastic state commit the rank holds (steps)");
  for (const auto& [rank, r] : ranks) {
    if (r.commit) out.sample("hvd_rank_elastic_commits_total", labels(rank), *r.commit);
  }
  out.family("hvd_rank_stats_age_seconds", "gauge",
             "Seconds since the rank last sent its counters");
  for (const auto& [rank, r] : ranks) {
    if (r.at == daemon::RankStats::Clock::time_point{}) continue;
    out.sample("hvd_rank_stats_age_seconds", labels(rank),
               std::chrono::duration<double>(now - r.at).count());
  }
  out.family("hvd_rank_allreduce_latency_seconds", "histogram",
             "Allreduce latency from enqueue to done, per rank");
  for (const auto& [rank, r] : ranks) {
    const auto& buckets = r.stats.allreduce_latency_buckets();
    if (buckets.size() != static_cast<int>(kLatencyBounds.size() + 1)) continue;
    for (int b = 0; b < buckets.size(); ++b) {
      MetricLabels l = labels(rank);
      l.push_back({"le", b < static_cast<int>(kLatencyBounds.size())
                             ? std::string(kLatencyBounds[static_cast<size_t>(b)])
                             : "+Inf"});
      out.sample("hvd_rank_allreduce_latency_seconds_bucket", l, static_cast<double>(buckets[b]));
    }
    out.sample("hvd_rank_allreduce_latency_seconds_sum", labels(rank),
               r.stats.allreduce_latency_sum_seconds());
    out.sample("hvd_rank_allreduce_latency_seconds_count", labels(rank),
               static_cast<double>(buckets[buckets.size() - 1]));
  }
}

}  // namespace

std::string render_job_metrics(const JobMonitor::Snapshot& job,
                               const std::map<int, daemon::RankStats::Report>& ranks,
                               daemon::RankStats::Clock::time_point now) {
  PrometheusText out;
  job_metrics(out, job);
  process_metrics(out, job);
  rank_counters(out, job, ranks, now);
  return out.text();
}

}  // namespace hvd::launcher
