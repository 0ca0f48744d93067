// What hvdrun's metrics port shows (docs/metrics.md): the job monitor's
// states, failures and events; the Prometheus text and the page's JSON.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/rendezvous/liveness.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/job_metrics_text.h"
#include "launcher/job_monitor.h"
#include "launcher/job_state_json.h"

using namespace hvd::launcher;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("JobMonitor: exits are gone and counted by cause, stops are stopped") {
  hvd::daemon::RendezvousService rendezvous("token-not-shown", 3);
  JobMonitor monitor(/*elastic=*/true, 1, 3);
  const std::vector<JobMonitor::Placed> placed = {{0, "h1", false}, {1, "h1", false},
                                                  {2, "h\"2", false}, {5, "h1", true}};
  monitor.exited(1, "h1", 0, 9, /*expected=*/false);
  monitor.exited(2, "h\"2", 3, 0, false);
  monitor.state_changed(0, true);
  monitor.agent_lost("h3", "stream broke");
  monitor.refresh(placed, {{"h3", 12.5}}, rendezvous, JobMonitor::Clock::now());
  const auto s = monitor.snapshot();
  REQUIRE(s.processes.size() == 4);
  CHECK(s.processes[0].state == ProcessState::kStopped);
  CHECK(s.processes[1].state == ProcessState::kGone);
  CHECK(s.processes[2].state == ProcessState::kGone);
  CHECK(s.processes[3].state == ProcessState::kSpare);
  CHECK(s.failures.at("signal") == 1);
  CHECK(s.failures.at("exit_code") == 1);
  CHECK(s.failures.at("agent_lost") == 1);
  REQUIRE(s.events.size() >= 5);
  CHECK(s.events[0].text == "rank 1 on h1 killed by signal 9");
  CHECK(s.blacklisted.at(0).host == "h3");

  const std::string text = render_job_metrics(s, {}, JobMonitor::Clock::now());
  CHECK(has_line(text, "hvd_job_min_size_ranks 1"));
  CHECK(has_line(text, "hvd_job_max_size_ranks 3"));
  CHECK(has_line(text, "hvd_failures_total{cause=\"signal\"} 1"));
  CHECK(has_line(text, "hvd_rank_state{rank=\"2\",host=\"h\\\"2\",state=\"gone\"} 1"));
  CHECK(has_line(text, "hvd_host_blacklisted_seconds{host=\"h3\"} 12.5"));
  CHECK(has_line(text, "hvd_host_ranks_alive{host=\"h1\"} 0"));
  CHECK(text.find("token") == std::string::npos);

  const std::string json = render_job_state_json(s, {});
  CHECK(json.find("{\"rank\":2,\"host\":\"h\\\"2\",\"state\":\"gone\"}") != std::string::npos);
  CHECK(json.find("\"failures\":{\"agent_lost\":1,\"exit_code\":1,\"signal\":1}") !=
        std::string::npos);
}

TEST_CASE("JobMonitor: a killed worker is gone until a worker joins its slot again") {
  using Clock = JobMonitor::Clock;
  hvd::daemon::Liveness liveness(2);
  JobMonitor monitor(/*elastic=*/true, 1, 2);
  const std::vector<JobMonitor::Placed> placed = {{0, "h1", false}, {1, "h1", false}};
  const JobMonitor::Rounds rounds{0, {}, 0};
  auto state_of_1 = [&] {
    monitor.refresh(placed, {}, rounds, liveness, Clock::now());
    return monitor.snapshot().processes.at(1).state;
  };
  liveness.joined(0, Clock::now());
  liveness.joined(1, Clock::now());
  CHECK(state_of_1() == ProcessState::kRunning);
  monitor.exited(1, "h1", 0, 9, /*expected=*/false);
  CHECK(state_of_1() == ProcessState::kGone);
  // A heartbeat the dead worker sent before it died, handled after its exit
  // was seen (a busy machine): still gone.
  liveness.beat(1, Clock::now() + std::chrono::milliseconds(5));
  CHECK(state_of_1() == ProcessState::kGone);
  liveness.left(1);  // the round forms without it
  CHECK(state_of_1() == ProcessState::kGone);
  liveness.joined(1, Clock::now() + std::chrono::milliseconds(10));  // its replacement
  CHECK(state_of_1() == ProcessState::kRunning);
}

TEST_CASE("JobMonitor: the exit of a worker a promoted spare replaced leaves its slot running") {
  using Clock = JobMonitor::Clock;
  hvd::daemon::Liveness liveness(2);
  JobMonitor monitor(/*elastic=*/true, 1, 2);
  const std::vector<JobMonitor::Placed> placed = {{0, "h1", false}, {1, "h1", false}};
  liveness.joined(0, Clock::now());
  liveness.joined(1, Clock::now());  // the spare, promoted into slot 1
  monitor.exited(1, "h1", 0, 9, /*expected=*/true, /*current=*/false);
  monitor.refresh(placed, {}, JobMonitor::Rounds{1, {}, 1}, liveness, Clock::now());
  const auto s = monitor.snapshot();
  CHECK(s.processes.at(1).state == ProcessState::kRunning);
  CHECK(s.events.at(0).text == "rank 1 on h1 killed by signal 9");
}

TEST_CASE("An expected exit (hvdrun ending the job) is no failure") {
  hvd::daemon::RendezvousService rendezvous("t", 1);
  JobMonitor monitor(false, 1, 1);
  monitor.exited(0, "h1", 143, 0, /*expected=*/true);
  CHECK(monitor.snapshot().failures.empty());
}

TEST_CASE("render_job_metrics: per-rank counters and the latency histogram") {
  JobMonitor::Snapshot job;
  job.processes = {{0, "h1", ProcessState::kRunning, 0.25}};
  hvd::daemon::RankStats::Report r;
  auto* op = r.stats.add_ops();
  op->set_op("allreduce");
  op->set_completed(7);
  op->set_bytes(7168);
  for (int b = 0; b < 15; ++b) r.stats.add_allreduce_latency_buckets(b < 3 ? 0 : 7);
  r.stats.set_allreduce_latency_sum_seconds(0.002);
  r.commit = 42;
  const std::string text = render_job_metrics(job, {{0, r}}, hvd::daemon::RankStats::Clock::now());
  CHECK(has_line(text, "hvd_rank_ops_total{rank=\"0\",host=\"h1\",op=\"allreduce\","
                       "process_set=\"0\"} 7"));
  CHECK(has_line(text, "hvd_rank_op_bytes_total{rank=\"0\",host=\"h1\",op=\"allreduce\","
                       "process_set=\"0\"} 7168"));
  CHECK(has_line(text, "hvd_rank_allreduce_latency_seconds_bucket{rank=\"0\",host=\"h1\","
                       "le=\"0.00025\"} 0"));
  CHECK(has_line(text, "hvd_rank_allreduce_latency_seconds_bucket{rank=\"0\",host=\"h1\","
                       "le=\"+Inf\"} 7"));
  CHECK(has_line(text, "hvd_rank_allreduce_latency_seconds_count{rank=\"0\",host=\"h1\"} 7"));
  CHECK(has_line(text, "hvd_rank_elastic_commits_total{rank=\"0\",host=\"h1\"} 42"));
  CHECK(has_line(text, "hvd_rank_heartbeat_age_seconds{rank=\"0\",host=\"h1\"} 0.25"));
  CHECK(text.find("# TYPE hvd_rank_allreduce_latency_seconds histogram\n") != std::string::npos);
}
