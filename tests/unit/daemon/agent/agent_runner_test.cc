// run_agent in process: the secret and TLS files are checked before
// anything listens, and the stop trigger shuts the agent down cleanly.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "agent_fixture.h"
#include "daemon/agent/agent_runner.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::AgentConfig;
using hvd::daemon::run_agent;
using hvd::daemon::test::agent_context;
using hvd::daemon::test::kAgentSecret;
namespace agent_exit = hvd::daemon::agent_exit;
namespace v1 = hvd::v1;

namespace {

struct TempSecret {
  explicit TempSecret(mode_t mode) {
    char tmpl[] = "/tmp/hvd-runner-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/secret";
    std::ofstream(path) << kAgentSecret;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
  }
  ~TempSecret() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir, path;
};

AgentConfig local_config(const std::string& secret_file) {
  AgentConfig config;
  config.secret_file = secret_file;
  config.listen = {"127.0.0.1", 0};
  config.slots = 2;
  return config;
}

int never_called() {
  FAIL("the agent must not start");
  return 0;
}

}  // namespace

TEST_CASE("run_agent serves until stopped, then returns 0") {
  TempSecret secret(0600);
  std::promise<std::string> listening;
  std::promise<int> stop;
  auto stop_future = stop.get_future();
  auto runner = std::async(std::launch::async, [&] {
    return run_agent(
        local_config(secret.path), [&] { return stop_future.get(); },
        [&](const std::string& address) { listening.set_value(address); });
  });
  auto address_future = listening.get_future();
  REQUIRE(address_future.wait_for(10s) == std::future_status::ready);
  const std::string address = address_future.get();
  CHECK_THAT(address, Catch::StartsWith("127.0.0.1:"));

  auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::InfoReply info;
  REQUIRE(stub->Info(agent_context("Agent.Info").get(), v1::InfoRequest(), &info).ok());
  CHECK(info.slots() == 2);

  stop.set_value(SIGTERM);
  REQUIRE(runner.wait_for(15s) == std::future_status::ready);
  CHECK(runner.get() == agent_exit::kOk);
  // Nobody listens there any more.
  v1::InfoReply after;
  CHECK_FALSE(stub->Info(agent_context("Agent.Info", kAgentSecret, 2000ms).get(),
                         v1::InfoRequest(), &after)
                  .ok());
}

TEST_CASE("run_agent refuses unusable secret and TLS files with the usage exit code") {
  TempSecret loose(0644);
  CHECK(run_agent(local_config(loose.path), never_called) == agent_exit::kUsage);
  CHECK(run_agent(local_config(loose.dir + "/absent"), never_called) == agent_exit::kUsage);
  TempSecret good(0600);
  auto config = local_config(good.path);
  config.tls = {good.dir + "/no-cert.pem", good.dir + "/no-key.pem", good.dir + "/no-ca.pem"};
  CHECK(run_agent(config, never_called) == agent_exit::kUsage);
}

TEST_CASE("run_agent cannot listen on an address of no interface: exit code 1") {
  TempSecret secret(0600);
  auto config = local_config(secret.path);
  config.listen = {"192.0.2.1", 29470};  // TEST-NET-1
  CHECK(run_agent(config, never_called) == agent_exit::kFailure);
}
