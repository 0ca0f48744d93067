// hvd-agent's /metrics counters (agent_metrics.h): a launched job's process,
// its exit by cause and its output bytes; calls refused by reason.
#include <catch2/catch.hpp>
#include <string>

#include "agent_fixture.h"

using namespace hvd::daemon;
using namespace hvd::daemon::test;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("AgentService counts processes, exits, output and refusals") {
  AgentFixture agent;
  auto req = launch_request("job-m", {{"sh", "-c", "echo hi; echo oops >&2; exit 4"}});
  hvd::v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(agent_context("Agent.Launch").get(), req, &reply).ok());
  REQUIRE(watch_job(*agent.stub, "job-m").status.ok());
  hvd::v1::InfoReply info;
  CHECK(agent.stub->Info(agent_context("Agent.Info", "wrong-secret").get(), {}, &info)
            .error_code() == grpc::StatusCode::UNAUTHENTICATED);

  const std::string text = agent.service.metrics().render();
  CHECK(has_line(text, "hvd_agent_processes_started_total 1"));
  CHECK(has_line(text, "hvd_agent_processes_running 0"));
  CHECK(has_line(text, "hvd_agent_exits_total{cause=\"exit_code\"} 1"));
  CHECK(has_line(text, "hvd_agent_exits_total{cause=\"signal\"} 0"));
  CHECK(has_line(text, "hvd_agent_output_bytes_total{stream=\"stdout\"} 3"));
  CHECK(has_line(text, "hvd_agent_output_bytes_total{stream=\"stderr\"} 5"));
  CHECK(has_line(text, "hvd_agent_refused_calls_total{reason=\"unauthenticated\"} 1"));
  CHECK(text.find(kAgentSecret) == std::string::npos);
}
