#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "launcher/ssh_agents.h"

using namespace hvd::launcher;

TEST_CASE("the ssh command line of a job-scoped agent") {
  LaunchOptions o;
  CHECK(ssh_agent_argv(o, "h1") ==
        std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "h1", "hvd-agent",
                                 "--secret-stdin", "--exit-on-stdin-eof", "--listen",
                                 "0.0.0.0:0", "--orphan-grace", "0", "--log-level", "warning"});
  o.ssh_command = {"wrap", "ssh"};
  o.ssh_port = 2222;
  o.ssh_agent_path = "/opt/hvd-agent";
  auto argv = ssh_agent_argv(o, "node7");
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + 8) ==
        std::vector<std::string>{"wrap", "ssh", "-o", "BatchMode=yes", "-p", "2222", "node7",
                                 "/opt/hvd-agent"});
}

TEST_CASE("the agent's ready line gives the port") {
  CHECK(ready_line_port("hvd-agent: listening on 0.0.0.0:41234") == 41234);
  CHECK(ready_line_port("[2026-01-01 00:00:00.000] [info] [hvd-agent] listening on [::]:29470") ==
        29470);
  CHECK(ready_line_port("hvd-agent: error: cannot listen on 0.0.0.0:1") == 0);
  CHECK(ready_line_port("listening on 0.0.0.0:") == 0);
  CHECK(ready_line_port("listening on 0.0.0.0:99999") == 0);
  CHECK(ready_line_port("bash: hvd-agent: command not found") == 0);
}
