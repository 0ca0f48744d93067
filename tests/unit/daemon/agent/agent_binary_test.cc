// The hvd-agent executable as a user runs it: exit codes, the listening
// line, and SIGTERM terminating the workers of its jobs.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "agent_fixture.h"
#include "tests/unit/daemon/agent/containment_util.h"
#include "tests/unit/daemon/test_util.h"

#ifndef HVD_AGENT_BIN
#error "HVD_AGENT_BIN must name the hvd-agent executable"
#endif

extern char** environ;

using namespace std::chrono_literals;
using hvd::daemon::test::agent_context;
using hvd::daemon::test::eventually;
using hvd::daemon::test::kAgentSecret;
using hvd::daemon::test::launch_request;
using hvd::daemon::test::process_gone;
namespace v1 = hvd::v1;

namespace {

// A private directory with a 0600 secret file, removed at the end.
struct SecretDir {
  SecretDir() {
    char tmpl[] = "/tmp/hvd-agent-bin-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    secret_file = dir + "/secret";
    std::ofstream(secret_file) << kAgentSecret << "\n";
    REQUIRE(::chmod(secret_file.c_str(), 0600) == 0);
  }
  ~SecretDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir, secret_file;
};

// hvd-agent with `args`, its stderr on a pipe, without HVD_SECRET_FILE.
class AgentProcess {
 public:
  // `stdin_pipe`: the agent's stdin is a pipe written by write_stdin().
  explicit AgentProcess(const std::vector<std::string>& args, bool stdin_pipe = false) {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    int in[2] = {-1, -1};
    if (stdin_pipe) REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stdin_pipe) posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> argv_strings = {HVD_AGENT_BIN};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("HVD_SECRET_FILE=", 0) != 0) envp.push_back(*e);
    }
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, HVD_AGENT_BIN, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    err_fd_ = fds[0];
    if (stdin_pipe) ::close(in[0]);
    in_fd_ = in[1];
    REQUIRE(rc == 0);
  }
  void write_stdin(const std::string& text) {
    REQUIRE(::write(in_fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  }
  void close_stdin() {
    if (in_fd_ >= 0) ::close(in_fd_);
    in_fd_ = -1;
  }
  ~AgentProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(err_fd_);
    close_stdin();
  }

  // Reads stderr until `pattern` matches a line or the deadline passes;
  // returns the first capture group of the match ("" when none).
  std::string wait_for_line(const std::regex& pattern, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      size_t newline;
      while ((newline = buffer_.find('\n', scanned_)) != std::string::npos) {
        std::string line = buffer_.substr(scanned_, newline - scanned_);
        scanned_ = newline + 1;
        std::smatch m;
        if (std::regex_search(line, m, pattern)) return m.size() > 1 ? m[1].str() : line;
      }
      if (!read_some(100ms)) break;
    }
    return "";
  }

  // Waits for the exit; the exit code, 128+N for signal N, -1 at the deadline.
  int wait_exit(std::chrono::milliseconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      read_some(20ms);  // keep the pipe drained
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        while (read_some(0ms)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

  void signal(int sig) { ::kill(pid_, sig); }
  const std::string& stderr_text() const { return buffer_; }

 private:
  // False at end of file or error.
  bool read_some(std::chrono::milliseconds timeout) {
    pollfd p{err_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return timeout.count() > 0;
    char chunk[4096];
    const ssize_t n = ::read(err_fd_, chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int err_fd_ = -1;
  int in_fd_ = -1;
  std::string buffer_;
  size_t scanned_ = 0;
};

}  // namespace

TEST_CASE("hvd-agent serves on the port it logs and SIGTERM ends it and its workers") {
  SecretDir secret;
  AgentProcess agent({"--secret-file", secret.secret_file, "--listen", "127.0.0.1:0", "--slots",
                      "3", "--log-level", "info"});
  const std::string port = agent.wait_for_line(std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"));
  INFO(agent.stderr_text());
  REQUIRE_FALSE(port.empty());

  auto stub = v1::Agent::NewStub(
      grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  v1::InfoReply info;
  REQUIRE(stub->Info(agent_context("Agent.Info").get(), v1::InfoRequest(), &info).ok());
  CHECK(info.slots() == 3);
  // A worker that ignores SIGTERM is killed after the grace.
  auto req = launch_request("bin-job", {{"sleep", "100"}, {"sh", "-c", "trap '' TERM; sleep 100"}});
  v1::LaunchReply reply;
  REQUIRE(stub->Launch(agent_context("Agent.Launch").get(), req, &reply).ok());
  REQUIRE(reply.started_size() == 2);
  CHECK_FALSE(agent.wait_for_line(std::regex("job=bin-job rank=1 pid=\\d+ started")).empty());

  agent.signal(SIGTERM);
  CHECK(agent.wait_exit() == 0);
  for (const auto& started : reply.started()) CHECK(process_gone(started.pid()));
  CHECK_THAT(agent.stderr_text(), Catch::Contains("SIGTERM received"));
  CHECK_THAT(agent.stderr_text(), !Catch::Contains(kAgentSecret));
}

TEST_CASE("hvd-agent exits 2 naming a bad flag value, 1 when it cannot listen") {
  SecretDir secret;
  {
    AgentProcess agent({"--secret-file", secret.secret_file, "--slots", "lots"});
    CHECK(agent.wait_exit() == 2);
    CHECK(agent.stderr_text() == "hvd-agent: error: --slots 'lots': expected a whole number "
                                 "from 1 to 1048576\n");
  }
  {
    AgentProcess agent({"--listen", "127.0.0.1:0"});  // no secret
    CHECK(agent.wait_exit() == 2);
    CHECK_THAT(agent.stderr_text(), Catch::StartsWith("hvd-agent: error: --secret-file"));
  }
  {
    const std::string loose = secret.dir + "/loose";
    std::ofstream(loose) << kAgentSecret;
    REQUIRE(::chmod(loose.c_str(), 0644) == 0);
    AgentProcess agent({"--secret-file", loose, "--listen", "127.0.0.1:0"});
    CHECK(agent.wait_exit() == 2);
    CHECK_THAT(agent.stderr_text(), Catch::Contains("mode 0644"));
    CHECK_THAT(agent.stderr_text(), !Catch::Contains(kAgentSecret));
  }
  {
    // An address of no interface here (TEST-NET-1).
    AgentProcess agent({"--secret-file", secret.secret_file, "--listen", "192.0.2.1:29470"});
    CHECK(agent.wait_exit() == 1);
    CHECK_THAT(agent.stderr_text(),
               Catch::Contains("hvd-agent: error: cannot listen on 192.0.2.1:29470"));
  }
}

TEST_CASE("hvd-agent --secret-stdin --exit-on-stdin-eof: job-scoped, ends at stdin's EOF") {
  {
    AgentProcess agent({"--secret-stdin", "--exit-on-stdin-eof", "--listen", "127.0.0.1:0",
                        "--log-level", "warning"},
                       /*stdin_pipe=*/true);
    agent.write_stdin(std::string(kAgentSecret) + "\n");
    // The ready line is printed even at --log-level warning.
    const std::string port =
        agent.wait_for_line(std::regex("^hvd-agent: listening on 127\\.0\\.0\\.1:(\\d+)$"));
    INFO(agent.stderr_text());
    REQUIRE_FALSE(port.empty());
    auto stub = v1::Agent::NewStub(
        grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
    auto req = launch_request("eof-job", {{"sleep", "100"}});
    v1::LaunchReply reply;
    REQUIRE(stub->Launch(agent_context("Agent.Launch").get(), req, &reply).ok());
    REQUIRE(reply.started_size() == 1);
    agent.write_stdin("more input is ignored\n");
    agent.close_stdin();
    CHECK(agent.wait_exit() == 0);
    CHECK(process_gone(reply.started(0).pid()));
    CHECK_THAT(agent.stderr_text(), !Catch::Contains(kAgentSecret));
  }
  {
    AgentProcess agent({"--secret-stdin", "--listen", "127.0.0.1:0"}, /*stdin_pipe=*/true);
    agent.write_stdin("short\n");
    agent.close_stdin();
    CHECK(agent.wait_exit() == 2);
    CHECK_THAT(agent.stderr_text(), Catch::Contains("stdin") && Catch::Contains("16"));
  }
}

namespace {

// The modes of hvd-agent --containment to test (containment_util.h).
std::vector<std::string> containment_modes() {
  std::vector<std::string> out;
  for (const auto& c : hvd::daemon::test::containments()) {
    out.push_back(c.cgroup ? "cgroup" : "subreaper");
  }
  return out;
}

// A job of two leave_children.sh workers that sleep, on the agent serving
// `port`; returns once their twelve children run.
v1::LaunchReply launch_children(const std::string& port, const std::string& job,
                                const std::string& token) {
  auto stub = v1::Agent::NewStub(
      grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  auto req = launch_request(job, {{"bash", HVD_LEAVE_CHILDREN, token, "sleep"},
                                  {"bash", HVD_LEAVE_CHILDREN, token, "sleep"}});
  for (int rank = 0; rank < req.workers_size(); ++rank) {
    (*req.mutable_workers(rank)->mutable_env())["HVD_RANK"] = std::to_string(rank);
  }
  v1::LaunchReply reply;
  // Deadlines for a loaded machine (two cores, busy processes beside).
  const grpc::Status launched =
      stub->Launch(agent_context("Agent.Launch", kAgentSecret, 60s).get(), req, &reply);
  INFO(launched.error_message());
  REQUIRE(launched.ok());
  REQUIRE(reply.started_size() == 2);
  REQUIRE(eventually(
      [&] {
        return hvd::daemon::test::left_of_kind(token, "").size() ==
               2 * std::size(hvd::daemon::test::kChildKinds);
      },
      60s));
  return reply;
}

// The parent of `pid` (a worker's keeper, or the agent).
pid_t parent_of(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int ppid = -1;
  std::sscanf(stat.c_str() + stat.rfind(')') + 1, " %*c %d", &ppid);
  return ppid;
}

// The cgroup v2 directory of `pid` ("" at the root).
std::string cgroup_of(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

}  // namespace

TEST_CASE("hvd-agent killed with SIGKILL leaves no process of its jobs, whatever they started") {
  SecretDir secret;
  for (const std::string& mode : containment_modes()) {
    INFO("--containment " << mode);
    AgentProcess agent({"--secret-file", secret.secret_file, "--listen", "127.0.0.1:0",
                        "--containment", mode, "--log-level", "info"});
    const std::string port =
        agent.wait_for_line(std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"), 60s);
    INFO(agent.stderr_text());
    REQUIRE_FALSE(port.empty());
    CHECK_THAT(agent.stderr_text(), Catch::Contains("containment: " + mode + " ("));
    const std::string token = hvd::daemon::test::unique_token();
    auto reply = launch_children(port, "kill-job", token);
    std::vector<pid_t> parents;
    for (const auto& started : reply.started()) parents.push_back(parent_of(started.pid()));
    const std::string cgroup = cgroup_of(reply.started(0).pid());
    if (mode == "cgroup") CHECK_THAT(cgroup, Catch::Contains("/hvd."));

    agent.signal(SIGKILL);
    CHECK(agent.wait_exit(60s) == 128 + SIGKILL);
    hvd::daemon::test::check_none_left(token, 15s);
    for (const auto& started : reply.started()) CHECK(process_gone(started.pid()));
    for (pid_t parent : parents) CHECK(eventually([&] { return process_gone(parent); }, 15s));
    if (mode == "cgroup") {
      const auto dir = std::filesystem::path(
          hvd::daemon::own_cgroup_dir().value() +
          cgroup.substr(cgroup.rfind('/')));  // a sibling of this test's cgroup
      CHECK(eventually([&] { return !std::filesystem::exists(dir); }, 15s));
    }
  }
}

TEST_CASE("hvd-agent cut off from the launcher ends the job and whatever it started") {
  SecretDir secret;
  for (const std::string& mode : containment_modes()) {
    INFO("--containment " << mode);
    AgentProcess agent({"--secret-file", secret.secret_file, "--listen", "127.0.0.1:0",
                        "--containment", mode, "--orphan-grace", "0.5", "--log-level", "info"});
    const std::string port =
        agent.wait_for_line(std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"), 60s);
    INFO(agent.stderr_text());
    REQUIRE_FALSE(port.empty());
    const std::string token = hvd::daemon::test::unique_token();
    // No Watch ever comes: the launcher is gone.
    auto reply = launch_children(port, "cut-job", token);
    CHECK_FALSE(agent.wait_for_line(std::regex("job=cut-job launcher gone"), 60s).empty());
    hvd::daemon::test::check_none_left(token, 20s);
    for (const auto& started : reply.started()) CHECK(process_gone(started.pid()));
  }
}
