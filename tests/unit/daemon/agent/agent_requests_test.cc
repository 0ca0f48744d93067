// Malformed and oversized Agent requests are refused before anything starts,
// and never take the agent down.
#include <catch2/catch.hpp>

#include <string>

#include "agent_fixture.h"
#include "daemon/agent/agent_requests.h"

using namespace std::chrono_literals;
using hvd::daemon::check_job_id;
using hvd::daemon::check_launch;
using hvd::daemon::test::agent_context;
using hvd::daemon::test::AgentFixture;
using hvd::daemon::test::kAgentSecret;
using hvd::daemon::test::launch_request;
namespace v1 = hvd::v1;

namespace {

// INVALID_ARGUMENT with `part` in the message.
void check_invalid(const grpc::Status& status, const std::string& part) {
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(status.error_message(), Catch::Contains(part));
}

}  // namespace

TEST_CASE("check_job_id wants 1..256 printable ASCII characters") {
  CHECK(check_job_id("job-0123abcd").ok());
  CHECK(check_job_id(std::string(256, 'j')).ok());
  check_invalid(check_job_id(""), "empty job id");
  check_invalid(check_job_id(std::string(257, 'j')), "longer than 256");
  check_invalid(check_job_id("job 1"), "printable ASCII");
  check_invalid(check_job_id("job\n[info] forged log line"), "printable ASCII");
  check_invalid(check_job_id(std::string("a\0b", 3)), "printable ASCII");
  check_invalid(check_job_id("j\xc3\xa9"), "printable ASCII");
}

TEST_CASE("check_launch refuses absurd requests, naming what is wrong") {
  CHECK(check_launch(launch_request("ok", {{"true"}, {"sh", "-c", "exit 0"}})).ok());

  SECTION("too many workers") {
    std::vector<std::vector<std::string>> argvs(hvd::daemon::kMaxWorkersPerLaunch + 1, {"true"});
    check_invalid(check_launch(launch_request("many", argvs)), "workers");
  }
  SECTION("a negative rank") {
    auto req = launch_request("neg", {{"true"}});
    req.mutable_workers(0)->set_rank(-1);
    check_invalid(check_launch(req), "negative rank -1");
  }
  SECTION("an empty command name") {
    check_invalid(check_launch(launch_request("e", {{"", "x"}})), "empty command name");
  }
  SECTION("too many arguments") {
    std::vector<std::string> argv(hvd::daemon::kMaxArgs + 1, "x");
    check_invalid(check_launch(launch_request("args", {argv})), "command-line arguments");
  }
  SECTION("an argument longer than the kernel takes") {
    check_invalid(
        check_launch(launch_request("long", {{"echo", std::string(hvd::daemon::kMaxArgBytes + 1,
                                                                  'a')}})),
        "argument 1 is longer");
  }
  SECTION("a NUL byte in an argument") {
    check_invalid(check_launch(launch_request("nul", {{"echo", std::string("a\0b", 3)}})),
                  "NUL byte");
  }
  SECTION("bad environment variables") {
    auto req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())["A=B"] = "x";
    check_invalid(check_launch(req), "invalid environment variable name 'A=B'");
    req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())[""] = "x";
    check_invalid(check_launch(req), "invalid environment variable name");
    req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())["BIG"] = std::string(hvd::daemon::kMaxArgBytes, 'v');
    check_invalid(check_launch(req), "BIG is longer");
    req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())["Z"] = std::string("a\0b", 3);
    check_invalid(check_launch(req), "Z contains a NUL byte");
  }
  SECTION("environment variable names are quoted escaped (fuzz/regressions/agent/)") {
    auto req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())["\x1b[2J=X"] = "x";
    check_invalid(check_launch(req), "invalid environment variable name '\\x1b[2J=X'");
    req = launch_request("env", {{"true"}});
    (*req.mutable_workers(0)->mutable_env())["\x1b]0;T\a"] = std::string("a\0b", 3);
    check_invalid(check_launch(req), "environment variable \\x1b]0;T\\x07 contains a NUL byte");
  }
  SECTION("too many environment variables") {
    auto req = launch_request("envs", {{"true"}});
    auto& env = *req.mutable_workers(0)->mutable_env();
    for (int i = 0; i <= hvd::daemon::kMaxEnvEntries; ++i) env["V" + std::to_string(i)] = "";
    check_invalid(check_launch(req), "environment variables");
  }
  SECTION("a working directory longer than PATH_MAX") {
    auto req = launch_request("cwd", {{"true"}});
    req.mutable_workers(0)->set_cwd("/" + std::string(5000, 'd'));
    check_invalid(check_launch(req), "working directory");
  }
}

TEST_CASE("Agent answers malformed calls with INVALID_ARGUMENT and keeps serving") {
  AgentFixture agent;
  const std::string huge_id(100'000, 'j');
  v1::LaunchReply launch_reply;
  check_invalid(agent.stub->Launch(agent_context("Agent.Launch").get(),
                                   launch_request(huge_id, {{"true"}}), &launch_reply),
                "job id longer");
  // Within the small methods' request limits (call_gate.h), over the job id's.
  const std::string long_id(300, 'j');
  v1::WatchRequest watch;
  watch.set_job_id(long_id);
  {
    auto ctx = agent_context("Agent.Watch");
    auto reader = agent.stub->Watch(ctx.get(), watch);
    v1::WatchEvent event;
    CHECK_FALSE(reader->Read(&event));
    check_invalid(reader->Finish(), "job id longer");
  }
  v1::SignalRequest signal;
  signal.set_job_id(long_id);
  signal.set_signal(15);
  v1::SignalReply signal_reply;
  check_invalid(agent.stub->Signal(agent_context("Agent.Signal").get(), signal, &signal_reply),
                "job id longer");
  v1::TerminateRequest term;
  term.set_job_id("bad\x01id");
  v1::TerminateReply term_reply;
  check_invalid(agent.stub->Terminate(agent_context("Agent.Terminate").get(), term, &term_reply),
                "printable ASCII");
  v1::InfoReply info;
  CHECK(agent.stub->Info(agent_context("Agent.Info").get(), v1::InfoRequest(), &info).ok());
}

TEST_CASE("Agent refuses a request over the receive limit with RESOURCE_EXHAUSTED") {
  hvd::daemon::ServerOptions server_options;
  server_options.max_receive_bytes = 1 << 20;
  AgentFixture agent(hvd::daemon::AgentOptions{kAgentSecret, 1}, server_options);
  std::vector<std::string> argv = {"echo"};
  for (int i = 0; i < 20; ++i) argv.push_back(std::string(100'000, 'x'));  // ~2 MB
  v1::LaunchReply reply;
  auto status = agent.stub->Launch(agent_context("Agent.Launch").get(),
                                   launch_request("too-big", {argv}), &reply);
  CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Nothing was launched, and the agent still serves.
  v1::InfoReply info;
  CHECK(agent.stub->Info(agent_context("Agent.Info").get(), v1::InfoRequest(), &info).ok());
  auto watch = hvd::daemon::test::watch_job(*agent.stub, "too-big");
  CHECK(watch.status.error_code() == grpc::StatusCode::NOT_FOUND);
}
