#include <catch2/catch.hpp>

#include <map>

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <future>

#include "daemon/agent/agent_service.h"
#include "proto/grpc_server.h"
#include "hvd/v1/agent.grpc.pb.h"
#include "proto/agent_auth.h"
#include "agent_fixture.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::AgentOptions;
using hvd::daemon::AgentService;
using hvd::daemon::GrpcServer;
using hvd::daemon::test::count_processes;
using hvd::daemon::test::eventually;
namespace v1 = hvd::v1;

namespace {

using hvd::daemon::test::WatchResult;
constexpr const char* kSecret = hvd::daemon::test::kAgentSecret;
using Agent = hvd::daemon::test::AgentFixture;

std::unique_ptr<grpc::ClientContext> context(const char* method,
                                             const std::string& token = kSecret) {
  return hvd::daemon::test::agent_context(method, token);
}

WatchResult watch(v1::Agent::Stub& stub, const std::string& job_id,
                  const std::string& token = kSecret) {
  return hvd::daemon::test::watch_job(stub, job_id, token);
}

using hvd::daemon::test::launch_request;

std::vector<grpc::StatusCode> call_every_method(v1::Agent::Stub& stub, const std::string& token) {
  std::vector<grpc::StatusCode> codes;
  {
    auto req = launch_request("unauth", {{"sh", "-c", "echo should-not-run"}});
    v1::LaunchReply reply;
    codes.push_back(stub.Launch(context("Agent.Launch", token).get(), req, &reply).error_code());
  }
  codes.push_back(watch(stub, "unauth", token).status.error_code());
  {
    v1::SignalRequest req;
    req.set_job_id("unauth");
    req.set_signal(SIGTERM);
    v1::SignalReply reply;
    codes.push_back(stub.Signal(context("Agent.Signal", token).get(), req, &reply).error_code());
  }
  {
    v1::TerminateRequest req;
    req.set_job_id("unauth");
    v1::TerminateReply reply;
    codes.push_back(stub.Terminate(context("Agent.Terminate", token).get(), req, &reply).error_code());
  }
  {
    v1::InfoRequest req;
    v1::InfoReply reply;
    codes.push_back(stub.Info(context("Agent.Info", token).get(), req, &reply).error_code());
  }
  return codes;
}

}  // namespace

TEST_CASE("Agent refuses every call without the right secret") {
  Agent agent;
  const std::vector<grpc::StatusCode> refused(5, grpc::StatusCode::UNAUTHENTICATED);
  CHECK(call_every_method(*agent.stub, "") == refused);
  CHECK(call_every_method(*agent.stub, "wrong-secret") == refused);
  // Nothing was launched: the job is unknown.
  CHECK(watch(*agent.stub, "unauth").status.error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("Agent Launch then Watch streams output and the exit code, then ends") {
  Agent agent;
  auto req = launch_request("job-1", {{"sh", "-c", "echo hi; echo oops >&2; exit 4"}});
  v1::LaunchReply reply;
  auto status = agent.stub->Launch(context("Agent.Launch").get(), req, &reply);
  REQUIRE(status.ok());
  REQUIRE(reply.started_size() == 1);
  CHECK(reply.started(0).rank() == 0);
  CHECK(reply.started(0).pid() > 0);

  auto result = watch(*agent.stub, "job-1");
  REQUIRE(result.status.ok());
  REQUIRE(result.events.size() == 3);
  std::vector<std::pair<v1::Stream, std::string>> lines;
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(result.events[i].has_output());
    CHECK(result.events[i].output().rank() == 0);
    lines.emplace_back(result.events[i].output().stream(), result.events[i].output().lines(0));
  }
  CHECK(std::count(lines.begin(), lines.end(), std::make_pair(v1::STDOUT, std::string("hi"))) == 1);
  CHECK(std::count(lines.begin(), lines.end(), std::make_pair(v1::STDERR, std::string("oops"))) ==
        1);
  REQUIRE(result.events[2].has_exit());
  CHECK(result.events[2].exit().rank() == 0);
  CHECK(result.events[2].exit().pid() == reply.started(0).pid());
  CHECK(result.events[2].exit().exit_code() == 4);
  CHECK(result.events[2].exit().signal() == 0);

  // The job is over but still known.
  v1::TerminateRequest term;
  term.set_job_id("job-1");
  v1::TerminateReply term_reply;
  REQUIRE(agent.stub->Terminate(context("Agent.Terminate").get(), term, &term_reply).ok());
  CHECK(term_reply.killed() == 0);
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).error_code() ==
        grpc::StatusCode::ALREADY_EXISTS);
}

TEST_CASE("Agent Launch with append adds a replacement to a running job's stream") {
  Agent agent;
  // Rank 0 lives until its replacement partner has run; rank 1 fails at once.
  auto req = launch_request("job-a", {{"sh", "-c", "sleep 1; echo survivor"},
                                      {"sh", "-c", "exit 3"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  auto again = launch_request("job-a", {{"sh", "-c", "echo replacement; exit 0"}});
  again.mutable_workers(0)->set_rank(1);
  again.set_append(true);
  v1::LaunchReply added;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), again, &added).ok());
  REQUIRE(added.started_size() == 1);
  CHECK(added.started(0).rank() == 1);

  // One stream: both rank 1 processes and rank 0 end it.
  auto result = watch(*agent.stub, "job-a");
  REQUIRE(result.status.ok());
  std::vector<std::pair<int, int>> exits;  // rank, code
  std::vector<std::string> lines;
  for (const auto& e : result.events) {
    if (e.has_exit()) exits.emplace_back(e.exit().rank(), e.exit().exit_code());
    if (e.has_output()) lines.insert(lines.end(), e.output().lines().begin(), e.output().lines().end());
  }
  std::sort(exits.begin(), exits.end());
  CHECK(exits == std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 3}});
  CHECK(std::count(lines.begin(), lines.end(), "replacement") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "survivor") == 1);

  // The stream has ended: nothing can be added any more; unknown jobs neither.
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), again, &added).error_code() ==
        grpc::StatusCode::FAILED_PRECONDITION);
  again.set_job_id("job-unknown");
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), again, &added).error_code() ==
        grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("Agent Launch of a missing command is NOT_FOUND and starts nothing") {
  Agent agent;
  // Unique to this process, so that tests running side by side do not count.
  const std::vector<std::string> sleeper = {"sleep", "3600." + std::to_string(::getpid())};
  auto req = launch_request("job-missing", {sleeper, {"hvd-no-such-command-x2", "--flag"}});
  v1::LaunchReply reply;
  auto status = agent.stub->Launch(context("Agent.Launch").get(), req, &reply);
  CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(status.error_message() == "cannot execute 'hvd-no-such-command-x2': command not found");
  CHECK(reply.started_size() == 0);
  // Rank 0 had been started: it is gone again, and the job is unknown.
  CHECK(count_processes(sleeper) == 0);
  CHECK(watch(*agent.stub, "job-missing").status.error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("Agent Launch validates its request") {
  Agent agent;
  v1::LaunchReply reply;
  auto empty_id = launch_request("", {{"true"}});
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), empty_id, &reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  auto no_workers = launch_request("j", {});
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), no_workers, &reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  auto empty_argv = launch_request("j", {{}});
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), empty_argv, &reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  auto dup = launch_request("j", {{"true"}, {"true"}});
  dup.mutable_workers(1)->set_rank(0);
  auto status = agent.stub->Launch(context("Agent.Launch").get(), dup, &reply);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message() == "rank 0 appears twice in job 'j'");

  v1::SignalRequest sig;
  sig.set_job_id("j");
  sig.set_signal(0);
  v1::SignalReply sig_reply;
  CHECK(agent.stub->Signal(context("Agent.Signal").get(), sig, &sig_reply).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  sig.set_signal(SIGTERM);
  CHECK(agent.stub->Signal(context("Agent.Signal").get(), sig, &sig_reply).error_code() ==
        grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("Agent Signal with ranks reaches only those ranks' workers") {
  Agent agent;
  auto req = launch_request("job-one", {{"sh", "-c", "sleep 1; exit 5"}, {"sleep", "100"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  v1::SignalRequest sig;
  sig.set_job_id("job-one");
  sig.set_signal(SIGKILL);
  sig.add_ranks(1);
  v1::SignalReply sig_reply;
  REQUIRE(agent.stub->Signal(context("Agent.Signal").get(), sig, &sig_reply).ok());
  auto result = watch(*agent.stub, "job-one");
  REQUIRE(result.status.ok());
  std::map<int, std::pair<int, int>> exits;  // rank -> code, signal
  for (const auto& e : result.events) {
    if (e.has_exit()) exits[e.exit().rank()] = {e.exit().exit_code(), e.exit().signal()};
  }
  CHECK(exits[0] == std::make_pair(5, 0));  // untouched: ran to its end
  CHECK(exits[1] == std::make_pair(0, SIGKILL));
}

TEST_CASE("Agent Terminate ends a sleeping job and Watch reports SIGTERM") {
  Agent agent;
  auto req = launch_request("job-sleep", {{"sleep", "100"}, {"sleep", "100"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  REQUIRE(reply.started_size() == 2);

  auto watcher = std::async(std::launch::async, [&] { return watch(*agent.stub, "job-sleep"); });
  v1::TerminateRequest term;
  term.set_job_id("job-sleep");
  term.set_grace_ms(3000);
  v1::TerminateReply term_reply;
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(agent.stub->Terminate(context("Agent.Terminate").get(), term, &term_reply).ok());
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(term_reply.killed() == 0);

  REQUIRE(watcher.wait_for(10s) == std::future_status::ready);
  auto result = watcher.get();
  REQUIRE(result.status.ok());
  REQUIRE(result.events.size() == 2);
  for (const auto& e : result.events) {
    REQUIRE(e.has_exit());
    CHECK(e.exit().signal() == SIGTERM);
  }
}

TEST_CASE("Agent Signal reaches every worker") {
  Agent agent;
  auto req = launch_request("job-signal", {{"sleep", "100"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  v1::SignalRequest sig;
  sig.set_job_id("job-signal");
  sig.set_signal(SIGINT);
  v1::SignalReply sig_reply;
  REQUIRE(agent.stub->Signal(context("Agent.Signal").get(), sig, &sig_reply).ok());
  auto result = watch(*agent.stub, "job-signal");
  REQUIRE(result.status.ok());
  REQUIRE(result.events.size() == 1);
  CHECK(result.events[0].exit().signal() == SIGINT);
}

TEST_CASE("Agent keeps the events a watcher did not read for the next watcher") {
  Agent agent;
  auto req = launch_request("job-rewatch", {{"sh", "-c", "echo one; sleep 0.3; echo two"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  {
    auto ctx = context("Agent.Watch");
    v1::WatchRequest wreq;
    wreq.set_job_id("job-rewatch");
    auto reader = agent.stub->Watch(ctx.get(), wreq);
    v1::WatchEvent event;
    REQUIRE(reader->Read(&event));
    CHECK(event.output().lines(0) == "one");
    ctx->TryCancel();
    CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  }
  // The first Watch notices the cancel within 100 ms; until then a second
  // one is refused.
  WatchResult result;
  REQUIRE(eventually(
      [&] {
        result = watch(*agent.stub, "job-rewatch");
        return result.status.error_code() != grpc::StatusCode::FAILED_PRECONDITION;
      },
      5000ms));
  REQUIRE(result.status.ok());
  REQUIRE(result.events.size() == 2);
  CHECK(result.events[0].output().lines(0) == "two");
  CHECK(result.events[1].exit().exit_code() == 0);
}

TEST_CASE("Agent shutdown terminates jobs and ends Watch streams") {
  Agent agent;
  auto req = launch_request("job-shutdown", {{"sh", "-c", "trap '' TERM; echo ready; sleep 100"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(context("Agent.Launch").get(), req, &reply).ok());
  auto ctx = context("Agent.Watch");
  v1::WatchRequest wreq;
  wreq.set_job_id("job-shutdown");
  auto reader = agent.stub->Watch(ctx.get(), wreq);
  v1::WatchEvent event;
  REQUIRE(reader->Read(&event));
  CHECK(event.output().lines(0) == "ready");

  auto stopper = std::async(std::launch::async, [&] { agent.service.shutdown(200ms); });
  std::vector<v1::WatchEvent> rest;
  while (reader->Read(&event)) rest.push_back(event);
  auto status = reader->Finish();
  REQUIRE(stopper.wait_for(10s) == std::future_status::ready);
  REQUIRE(rest.size() == 1);
  REQUIRE(rest[0].has_exit());
  CHECK(rest[0].exit().signal() == SIGKILL);
  CHECK((status.ok() || status.error_code() == grpc::StatusCode::CANCELLED));

  auto again = launch_request("job-after", {{"true"}});
  CHECK(agent.stub->Launch(context("Agent.Launch").get(), again, &reply).error_code() ==
        grpc::StatusCode::UNAVAILABLE);
}

TEST_CASE("Agent Info reports host name, slots and version") {
  Agent agent;
  v1::InfoRequest req;
  v1::InfoReply reply;
  REQUIRE(agent.stub->Info(context("Agent.Info").get(), req, &reply).ok());
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof(host) - 1) == 0);
  CHECK(reply.hostname() == host);
  CHECK(reply.slots() == 4);
  CHECK(reply.gpus() >= 0);
  CHECK(reply.version() == HVD_VERSION);
  bool loopback = false;
  for (const auto& iface : reply.interfaces()) {
    for (const auto& address : iface.addresses()) loopback = loopback || address == "127.0.0.1";
  }
  CHECK(loopback);
}

TEST_CASE("Agent without a secret refuses every call") {
  AgentService service(AgentOptions{"", 1});
  auto started = GrpcServer::start("127.0.0.1", 0, {&service});
  REQUIRE(started.is_ok());
  auto stub = v1::Agent::NewStub(
      grpc::CreateChannel(started.value()->address(), grpc::InsecureChannelCredentials()));
  const std::vector<grpc::StatusCode> refused(5, grpc::StatusCode::UNAUTHENTICATED);
  CHECK(call_every_method(*stub, "") == refused);
  started.value()->shutdown(1000ms);
}
