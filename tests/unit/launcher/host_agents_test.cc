// HostAgents against real Agent services on 127.0.0.1: the embedded one and
// an AgentService on a GrpcServer standing in for a remote host's hvd-agent
// (the same service hvd-agent serves), reached through the remote path
// (address, secret, channel credentials).
#include "launcher/host_agents.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>

#include "daemon/agent/agent_service.h"
#include "proto/grpc_server.h"
#include "launcher/launch_requests.h"

using namespace hvd::launcher;
using namespace std::chrono_literals;

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef";

RemoteCredentials credentials(const std::string& secret = kSecret) {
  return {secret, grpc::InsecureChannelCredentials()};
}

// A stand-in for hvd-agent on another host.
struct FakeRemoteAgent {
  hvd::daemon::AgentService service{hvd::daemon::AgentOptions{kSecret, 4}};
  std::unique_ptr<hvd::daemon::GrpcServer> server;
  FakeRemoteAgent() {
    auto s = hvd::daemon::GrpcServer::start("127.0.0.1", 0, {&service});
    REQUIRE(s.is_ok());
    server = std::move(s).value();
  }
  ~FakeRemoteAgent() {
    service.shutdown(1s);
    server->shutdown(1s);
  }
};

AgentTarget local_target(std::vector<int> ranks) { return {"localhost", true, "", ranks}; }
AgentTarget remote_target(const std::string& host, const std::string& address,
                          std::vector<int> ranks) {
  return {host, false, address, ranks};
}

std::unique_ptr<HostAgents> start_ok(std::vector<AgentTarget> targets,
                                     std::optional<RemoteCredentials> remote, int slots = 2) {
  auto agents = HostAgents::start(std::move(targets), remote, slots);
  if (!agents.is_ok()) FAIL(agents.status().to_string());
  return std::move(agents).value();
}

std::vector<Environment> rank_envs(int np) {
  std::vector<Environment> envs;
  for (int r = 0; r < np; ++r) envs.push_back({{"PATH", std::getenv("PATH")}, {"R", std::to_string(r)}});
  return envs;
}

}  // namespace

TEST_CASE("local hosts get the embedded agent, remote hosts a client that has not connected") {
  auto agents = start_ok({local_target({0}), remote_target("h2.invalid", "h2.invalid:29470", {1})},
                         credentials());
  REQUIRE(agents->size() == 2);
  CHECK_THAT(agents->target(0).address, Catch::StartsWith("127.0.0.1:"));
  CHECK(agents->client(0).address() == agents->target(0).address);
  CHECK(agents->target(1).address == "h2.invalid:29470");
  CHECK(agents->client(1).address() == "h2.invalid:29470");
}

TEST_CASE("a remote host needs credentials") {
  auto agents = HostAgents::start({remote_target("h2", "h2:29470", {0})}, std::nullopt, 1);
  REQUIRE_FALSE(agents.is_ok());
  CHECK_THAT(agents.status().message(), Catch::Contains("h2"));
}

TEST_CASE("Info reaches the embedded and a remote agent") {
  FakeRemoteAgent remote;
  auto agents = start_ok(
      {local_target({0}), remote_target("h2", remote.server->address(), {1})}, credentials(), 3);
  auto infos = agents->info_all(5s);
  REQUIRE(infos.is_ok());
  REQUIRE(infos->size() == 2);
  CHECK((*infos)[0].slots() == 3);
  CHECK((*infos)[1].slots() == 4);
  CHECK_FALSE((*infos)[1].interfaces().empty());
}

TEST_CASE("an unreachable agent is named with its address and the timeout") {
  auto agents = start_ok({remote_target("nowhere", "127.0.0.1:1", {0})}, credentials());
  auto start = std::chrono::steady_clock::now();
  auto infos = agents->info_all(1s);
  REQUIRE_FALSE(infos.is_ok());
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(infos.status().code() == hvd::common::StatusCode::kUnavailable);
  CHECK_THAT(infos.status().message(),
             Catch::StartsWith("cannot reach the agent on host nowhere (127.0.0.1:1) within 1 s: "));
}

TEST_CASE("a wrong secret is refused credentials") {
  FakeRemoteAgent remote;
  auto agents = start_ok({remote_target("h2", remote.server->address(), {0})},
                         credentials("another-secret-another-secret"));
  auto infos = agents->info_all(5s);
  REQUIRE_FALSE(infos.is_ok());
  CHECK(infos.status().code() == hvd::common::StatusCode::kUnauthenticated);
  CHECK_THAT(infos.status().message(),
             Catch::StartsWith("the agent on host h2 refused the credentials (check "
                               "--secret-file/TLS): "));
}

TEST_CASE("ranks run on their agents and every Watch names its agent") {
  FakeRemoteAgent remote;
  auto agents = start_ok(
      {local_target({0}), remote_target("h2", remote.server->address(), {1, 2})}, credentials(), 1);
  auto requests = launch_requests("job-hosts-1", agents->targets(), rank_envs(3),
                                  {"sh", "-c", "echo out-$R"}, "");
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].workers_size() == 1);
  CHECK(requests[1].workers_size() == 2);
  CHECK(requests[1].workers(1).rank() == 2);
  CHECK(requests[1].workers(1).env().at("R") == "2");

  REQUIRE(agents->launch_all(requests, 10s, 1s).is_ok());
  EventQueue queue;
  agents->watch_all("job-hosts-1", queue);
  std::map<int, std::string> output;
  int exits = 0;
  std::vector<int> ended;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (ended.size() < 2) {
    auto event = queue.pop_until(deadline);
    REQUIRE(event.has_value());
    if (auto* out = std::get_if<WorkerOutput>(&*event)) output[out->rank] = out->lines.at(0);
    if (auto* exit = std::get_if<WorkerExited>(&*event)) {
      CHECK(exit->exit_code == 0);
      ++exits;
    }
    if (auto* end = std::get_if<WatchEnded>(&*event)) {
      CHECK(end->status.is_ok());
      ended.push_back(end->agent);
    }
  }
  CHECK(exits == 3);
  CHECK(output == std::map<int, std::string>{{0, "out-0"}, {1, "out-1"}, {2, "out-2"}});
  std::sort(ended.begin(), ended.end());
  CHECK(ended == std::vector<int>{0, 1});
  auto killed = agents->terminate_all("job-hosts-1", 1s, 5s, {}, 1s);
  CHECK(killed.is_ok());
}

TEST_CASE("a command missing on a remote host names the host; the others are terminated") {
  FakeRemoteAgent remote;
  auto agents = start_ok(
      {local_target({0}), remote_target("h2", remote.server->address(), {1})}, credentials(), 1);
  auto requests = launch_requests("job-hosts-2", agents->targets(), rank_envs(2),
                                  {"no-such-command-hvd-test"}, "");
  requests[0].mutable_workers(0)->clear_argv();
  requests[0].mutable_workers(0)->add_argv("sleep");
  requests[0].mutable_workers(0)->add_argv("30");
  auto start = std::chrono::steady_clock::now();
  hvd::common::Status s = agents->launch_all(requests, 10s, 1s);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == hvd::common::StatusCode::kNotFound);
  CHECK(s.message() == "cannot execute 'no-such-command-hvd-test': command not found on host h2");
  CHECK(std::chrono::steady_clock::now() - start < 10s);  // the sleep was terminated
}

TEST_CASE("the first refusal ends the wait for agents still unreachable") {
  FakeRemoteAgent remote;
  auto agents = start_ok({remote_target("nowhere", "127.0.0.1:1", {0}),
                          remote_target("h2", remote.server->address(), {1})},
                         credentials("another-secret-another-secret"));
  auto start = std::chrono::steady_clock::now();
  auto infos = agents->info_all(30s);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  REQUIRE_FALSE(infos.is_ok());
  CHECK_THAT(infos.status().message(), Catch::StartsWith("the agent on host h2 refused"));
}

TEST_CASE("a signal ends the wait for an unreachable agent") {
  auto agents = start_ok({remote_target("nowhere", "127.0.0.1:1", {0})}, credentials());
  auto start = std::chrono::steady_clock::now();
  auto infos = agents->info_all(30s, [&] { return std::chrono::steady_clock::now() - start > 500ms; });
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  REQUIRE_FALSE(infos.is_ok());
  CHECK(infos.status().code() == hvd::common::StatusCode::kCancelled);
}
