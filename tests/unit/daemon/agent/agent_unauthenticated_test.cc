// What unauthenticated peers cost a running hvd-agent (issue 21: 24
// concurrent unauthenticated 60 MB calls took 0.93 GB of RSS). The agent's
// call gate refuses them on their headers, so their bodies are never
// parsed, and its streams' small receive windows (issue 29) keep what
// arrives of them small: its peak RSS (VmHWM) barely moves.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "agent_fixture.h"
#include "hvd/v1/agent.grpc.pb.h"

#ifndef HVD_AGENT_BIN
#error "HVD_AGENT_BIN must name the hvd-agent executable"
#endif

extern char** environ;

using namespace std::chrono_literals;
using hvd::daemon::test::kAgentSecret;
namespace v1 = hvd::v1;

namespace {

// hvd-agent on a free loopback port, with a 0600 secret file.
class Agent {
 public:
  Agent() {
    char tmpl[] = "/tmp/hvd-agent-unauth-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    const std::string secret = dir_ + "/secret";
    std::ofstream(secret) << kAgentSecret << "\n";
    REQUIRE(::chmod(secret.c_str(), 0600) == 0);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    std::vector<std::string> args = {HVD_AGENT_BIN, "--secret-file", secret,  "--listen",
                                     "127.0.0.1:0", "--log-level",   "info"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, HVD_AGENT_BIN, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    err_fd_ = fds[0];
    REQUIRE(rc == 0);
  }
  ~Agent() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(err_fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The port from its ready line ("" after 10 s without it).
  std::string port() {
    const std::regex ready("listening on 127\\.0\\.0\\.1:(\\d+)");
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      if (std::regex_search(log_, m, ready)) return m[1].str();
      drain(100ms);
    }
    return "";
  }

  // Reads what it logged so far, so that it never blocks on a full pipe.
  void drain(std::chrono::milliseconds timeout) {
    pollfd p{err_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return;
    char chunk[4096];
    const ssize_t n = ::read(err_fd_, chunk, sizeof(chunk));
    if (n > 0) log_.append(chunk, static_cast<size_t>(n));
  }

  // Its peak resident set so far, in KiB (VmHWM), -1 when unknown.
  long peak_rss_kib() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

  const std::string& log() const { return log_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string log_;
};

}  // namespace

namespace {

// `count` unauthenticated Launch calls with `request` at once, each on a
// connection of its own or all on one (`shared`); their statuses.
std::vector<grpc::Status> flood(const std::string& address, const v1::LaunchRequest& request,
                                int count, bool shared) {
  auto channel_of = [&](bool own) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    if (own) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  };
  auto one = channel_of(/*own=*/true);
  if (shared) {
    // Connected first: calls a client starts before the server's SETTINGS
    // (at most 100 streams) arrive may be refused (REFUSED_STREAM, then
    // UNAVAILABLE: an 8 MiB call is too large to retry); after them, the
    // client queues what is over the limit.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::InfoReply reply;
    REQUIRE(v1::Agent::NewStub(one)->Info(&ctx, v1::InfoRequest(), &reply).error_code() ==
            grpc::StatusCode::UNAUTHENTICATED);
  }
  std::vector<grpc::Status> codes(count);
  std::vector<std::thread> peers;
  for (int i = 0; i < count; ++i) {
    peers.emplace_back([&, i] {
      auto peer = v1::Agent::NewStub(shared ? one : channel_of(/*own=*/true));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 30s);
      v1::LaunchReply reply;
      codes[i] = peer->Launch(&ctx, request, &reply);
    });
  }
  for (auto& t : peers) t.join();
  return codes;
}

// Refused: UNAUTHENTICATED, or, on a loaded machine, the connection closed
// by the agent's keepalive (a client too busy sending 200 x 8 MiB to answer
// its ping within 2 s is dropped like a partitioned launcher: "Socket
// closed"). Never admitted, never anything else.
bool refused(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
          status.error_message().find("Socket closed") != std::string::npos);
}

}  // namespace

// Issue 21 moved the credential check before the body is read; issue 29
// measured what the bodies still cost on their way in: gRPC grew each
// stream's receive window to megabytes (BDP probing), so a refused 8 MiB
// Launch still arrived in large pieces. 200 of them at once on one
// connection moved the agent's peak from 17 MB to 33-39 MB (40 on their
// own connections: +2.5 MB). The agent's streams now keep a 64 KiB window,
// at most 100 per connection (docs/security.md states the bound).
TEST_CASE("hvd-agent refuses floods of large unauthenticated calls within a memory bound") {
  Agent agent;
  const std::string port = agent.port();
  INFO(agent.log());
  REQUIRE_FALSE(port.empty());
  const std::string address = "127.0.0.1:" + port;

  // A first authenticated call: the agent's own baseline (threads, pools).
  auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::InfoReply info;
  REQUIRE(stub->Info(hvd::daemon::test::agent_context("Agent.Info").get(), v1::InfoRequest(),
                     &info)
              .ok());
  const long before = agent.peak_rss_kib();
  REQUIRE(before > 0);

  v1::LaunchRequest big;
  big.set_job_id("unauthenticated");
  big.add_workers()->add_argv(std::string(8 << 20, 'x'));
  // 40 peers at once, each on its own connection; then 200 calls at once on
  // one connection.
  for (const auto& status : flood(address, big, 40, /*shared=*/false)) {
    INFO(status.error_message());
    CHECK(refused(status));
  }
  const long after_40 = agent.peak_rss_kib();
  for (const auto& status : flood(address, big, 200, /*shared=*/true)) {
    INFO(status.error_message());
    CHECK(refused(status));
  }
  agent.drain(0ms);
  const long after = agent.peak_rss_kib();
  INFO("hvd-agent peak RSS: " << before << " KiB before, " << after_40 << " KiB after 40 calls, "
                              << after << " KiB after 200 more on one connection");
  // Measured: +1 to +4 MiB, also with both cores busy; before: +16 to +22 MiB.
  CHECK(after - before < 10 * 1024);
  // The agent still serves its launcher.
  REQUIRE(stub->Info(hvd::daemon::test::agent_context("Agent.Info").get(), v1::InfoRequest(),
                     &info)
              .ok());
}
