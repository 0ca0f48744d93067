// Orphans: a job whose launcher stopped watching it for orphan_grace is
// terminated by the agent (AgentOptions::orphan_grace).
#include <catch2/catch.hpp>

#include <signal.h>
#include <cerrno>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "agent_fixture.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::AgentOptions;
using hvd::daemon::test::agent_context;
using hvd::daemon::test::AgentFixture;
using hvd::daemon::test::eventually;
using hvd::daemon::test::kAgentSecret;
using hvd::daemon::test::launch_request;
using hvd::daemon::test::process_gone;
using hvd::daemon::test::watch_job;
namespace v1 = hvd::v1;

namespace {

AgentOptions with_grace(std::chrono::milliseconds grace) {
  AgentOptions options{kAgentSecret, 2};
  options.orphan_grace = grace;
  return options;
}

// Launches `sleep 100` as job `job_id`; returns the worker's pid.
int64_t launch_sleeper(AgentFixture& agent, const std::string& job_id) {
  auto req = launch_request(job_id, {{"sleep", "100"}});
  v1::LaunchReply reply;
  auto status = agent.stub->Launch(agent_context("Agent.Launch").get(), req, &reply);
  REQUIRE(status.ok());
  REQUIRE(reply.started_size() == 1);
  return reply.started(0).pid();
}

// True once no process is left in the worker's process group.
bool group_gone(int64_t pgid) {
  return ::kill(-static_cast<pid_t>(pgid), 0) != 0 && errno == ESRCH;
}

// A Watch held open on its own thread until cancel().
struct OpenWatch {
  OpenWatch(v1::Agent::Stub& stub, const std::string& job_id)
      : ctx(agent_context("Agent.Watch", kAgentSecret, 60'000ms)) {
    v1::WatchRequest req;
    req.set_job_id(job_id);
    reader = stub.Watch(ctx.get(), req);
    done = std::async(std::launch::async, [this] {
      v1::WatchEvent event;
      while (reader->Read(&event)) {
      }
      return reader->Finish();
    });
  }
  grpc::Status cancel() {
    ctx->TryCancel();
    REQUIRE(done.wait_for(10s) == std::future_status::ready);
    return done.get();
  }

  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader;
  std::future<grpc::Status> done;
};

}  // namespace

TEST_CASE("Agent terminates a job that nobody watches within the orphan grace") {
  AgentFixture agent(with_grace(300ms));
  const auto start = std::chrono::steady_clock::now();
  const int64_t pid = launch_sleeper(agent, "orphan-unwatched");
  REQUIRE_FALSE(process_gone(pid));
  REQUIRE(eventually([&] { return group_gone(pid); }, 3000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 300ms);
  // Its events are gone with it; a late watcher learns why.
  auto late = watch_job(*agent.stub, "orphan-unwatched");
  CHECK(late.status.error_code() == grpc::StatusCode::ABORTED);
  CHECK_THAT(late.status.error_message(), Catch::Contains("no launcher watched it"));
  CHECK(late.events.empty());
}

TEST_CASE("Agent keeps a job whose Watch is open past the orphan grace") {
  AgentFixture agent(with_grace(1000ms));
  const int64_t pid = launch_sleeper(agent, "orphan-watched");
  OpenWatch watch(*agent.stub, "orphan-watched");
  std::this_thread::sleep_for(1500ms);
  CHECK_FALSE(process_gone(pid));

  SECTION("until the Watch is cancelled: then it is terminated after the grace") {
    const auto cancelled_at = std::chrono::steady_clock::now();
    CHECK(watch.cancel().error_code() == grpc::StatusCode::CANCELLED);
    REQUIRE(eventually([&] { return group_gone(pid); }, 5000ms));
    CHECK(std::chrono::steady_clock::now() - cancelled_at >= 1000ms);
  }
  SECTION("a new Watch within the grace keeps it") {
    watch.cancel();
    // The agent notices the cancel within 100 ms; a Watch before that would
    // be refused (one watcher at a time).
    std::this_thread::sleep_for(400ms);
    OpenWatch again(*agent.stub, "orphan-watched");
    std::this_thread::sleep_for(1500ms);
    CHECK_FALSE(process_gone(pid));
    // Terminate ends it the normal way: the Watch sees the exit and ends OK.
    v1::TerminateRequest term;
    term.set_job_id("orphan-watched");
    term.set_grace_ms(2000);
    v1::TerminateReply reply;
    REQUIRE(agent.stub->Terminate(agent_context("Agent.Terminate").get(), term, &reply).ok());
    REQUIRE(again.done.wait_for(10s) == std::future_status::ready);
    CHECK(again.done.get().ok());
  }
}

TEST_CASE("Agent uses a Launch's shorter orphan grace once its Watch ends") {
  AgentFixture agent(with_grace(60'000ms));
  auto req = launch_request("orphan-short", {{"sleep", "100"}});
  req.set_orphan_grace_ms(500);  // hvdrun's heartbeat timeout
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(agent_context("Agent.Launch").get(), req, &reply).ok());
  REQUIRE(reply.started_size() == 1);
  const int64_t pid = reply.started(0).pid();
  // Not yet watched: the agent's own grace (hvdrun may still be launching elsewhere).
  std::this_thread::sleep_for(1000ms);
  REQUIRE_FALSE(process_gone(pid));
  OpenWatch watch(*agent.stub, "orphan-short");
  std::this_thread::sleep_for(300ms);
  const auto cancelled_at = std::chrono::steady_clock::now();
  CHECK(watch.cancel().error_code() == grpc::StatusCode::CANCELLED);
  REQUIRE(eventually([&] { return group_gone(pid); }, 5000ms));
  const auto took = std::chrono::steady_clock::now() - cancelled_at;
  CHECK(took >= 500ms);
  CHECK(took < 3000ms);
}

TEST_CASE("Agent with orphan grace 0 never terminates an unwatched job") {
  AgentFixture agent(with_grace(0ms));
  const int64_t pid = launch_sleeper(agent, "never-orphaned");
  std::this_thread::sleep_for(700ms);
  CHECK_FALSE(process_gone(pid));
  // The fixture's shutdown terminates it.
}

TEST_CASE("Agent orphan handling drops the output of a finished job nobody collects") {
  AgentFixture agent(with_grace(200ms));
  auto req = launch_request("orphan-finished", {{"sh", "-c", "echo unread"}});
  v1::LaunchReply reply;
  REQUIRE(agent.stub->Launch(agent_context("Agent.Launch").get(), req, &reply).ok());
  std::this_thread::sleep_for(800ms);
  auto late = watch_job(*agent.stub, "orphan-finished");
  CHECK(late.status.error_code() == grpc::StatusCode::ABORTED);
  CHECK(late.events.empty());
}
