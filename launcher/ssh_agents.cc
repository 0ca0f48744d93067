#include "launcher/ssh_agents.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <map>

#include "common/token.h"
#include "common/child_process.h"
#include "launcher/worker_environment.h"

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kExitWait{3'000};
constexpr std::chrono::milliseconds kTermWait{1'000};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Reaps `pid` within `wait`; false when it is still running.
bool reap(pid_t pid, std::chrono::milliseconds wait, int* status) {
  const auto deadline = Clock::now() + wait;
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) return false;
    ::usleep(20'000);
  }
}

std::string exit_text(const std::string& program, int status) {
  if (WIFEXITED(status)) {
    return program + " exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return program + " was killed by signal " + std::to_string(WTERMSIG(status));
  }
  return program + " ended";
}

}  // namespace

std::vector<std::string> ssh_agent_argv(const LaunchOptions& options, const std::string& host) {
  std::vector<std::string> argv = options.ssh_command;
  argv.insert(argv.end(), {"-o", "BatchMode=yes"});
  if (options.ssh_port > 0) argv.insert(argv.end(), {"-p", std::to_string(options.ssh_port)});
  argv.insert(argv.end(), {host, options.ssh_agent_path, "--secret-stdin", "--exit-on-stdin-eof",
                           "--listen", "0.0.0.0:0", "--orphan-grace", "0", "--log-level",
                           "warning"});
  return argv;
}

int ready_line_port(const std::string& line) {
  const std::string marker = "listening on ";
  const size_t at = line.find(marker);
  const size_t colon = line.rfind(':');
  if (at == std::string::npos || colon == std::string::npos || colon < at) return 0;
  int port = 0;
  for (size_t i = colon + 1; i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9' || port > 65535) return 0;
    port = port * 10 + (line[i] - '0');
  }
  return port <= 65535 ? port : 0;
}

common::Status SshAgents::start(std::vector<AgentTarget>& targets, const LaunchOptions& options,
                                std::chrono::seconds timeout) {
  auto secret = common::generate_token();
  if (!secret.is_ok()) return secret.status();
  secret_ = *secret;
  const std::string program = options.ssh_command.front();
  const Environment env = current_environment();
  auto failed = [](const std::string& host, const std::string& why) {
    return common::unavailable("cannot start the agent on host " + host + " over ssh: " + why);
  };
  for (const AgentTarget& target : targets) {
    if (target.local) continue;
    common::ProcessSpec spec{0, ssh_agent_argv(options, target.host),
                             std::map<std::string, std::string>(env.begin(), env.end()), ""};
    auto path = common::resolve_command(spec);
    if (!path.is_ok()) return failed(target.host, path.status().message());
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return failed(target.host, "cannot create a pipe");
    common::UniqueFd child_stdin = common::above_stdio(pipe_fds[0]);
    auto child = common::start_child(spec, *path, child_stdin.get());
    if (!child.is_ok()) {
      ::close(pipe_fds[1]);
      return failed(target.host, child.status().message());
    }
    auto& remote = remotes_.emplace_back(std::make_unique<Remote>());
    remote->host = target.host;
    remote->pid = child->pid;
    remote->stdin_fd = pipe_fds[1];
    remote->stdout_fd = child->stdout_fd.release();
    remote->stderr_fd = child->stderr_fd.release();
    const std::string line = secret_ + "\n";
    // A short write means ssh is already gone: its exit shows below.
    [[maybe_unused]] ssize_t written = ::write(remote->stdin_fd, line.data(), line.size());
  }

  // Every ready line, or the first failure.
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    bool all_ready = true;
    std::vector<pollfd> fds;
    for (auto& remote : remotes_) {
      if (remote->port > 0) continue;
      all_ready = false;
      fds.push_back({remote->stderr_fd, POLLIN, 0});
      if (remote->stdout_fd >= 0) fds.push_back({remote->stdout_fd, POLLIN, 0});
    }
    if (all_ready) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      for (auto& remote : remotes_) {
        if (remote->port == 0) {
          return failed(remote->host, "no ready line within " + std::to_string(timeout.count()) +
                                          " s" + (remote->last_line.empty()
                                                      ? std::string()
                                                      : " (last line: " + remote->last_line + ")"));
        }
      }
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count(), 200)));
    for (auto& remote : remotes_) {
      if (remote->port > 0 || drain(*remote, false)) continue;
      // stderr closed before the ready line: ssh (or the agent) is gone.
      int status = 0;
      if (reap(remote->pid, kExitWait, &status)) remote->exited = true;
      return failed(remote->host, !remote->last_line.empty()
                                      ? remote->last_line
                                      : remote->exited ? exit_text(program, status)
                                                       : "its stderr closed");
    }
  }
  for (AgentTarget& target : targets) {
    for (auto& remote : remotes_) {
      if (!target.local && remote->host == target.host) {
        target.address = host_port(target.host, remote->port);
      }
    }
  }
  drainer_ = std::thread([this] { drain_loop(); });
  return common::Status::ok();
}

// Reads what is there; false once stderr reached EOF. Lines are looked at
// for the ready line, and forwarded to hvdrun's stderr when `forward`.
bool SshAgents::drain(Remote& remote, bool forward) {
  char buffer[4096];
  if (remote.stdout_fd >= 0) {
    for (;;) {
      const ssize_t n = ::read(remote.stdout_fd, buffer, sizeof(buffer));
      if (n > 0) continue;
      if (n == 0) close_fd(remote.stdout_fd);
      break;
    }
  }
  if (remote.stderr_fd < 0) return false;
  for (;;) {
    const ssize_t n = ::read(remote.stderr_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return true;  // EAGAIN
    if (n == 0) {
      close_fd(remote.stderr_fd);
      return false;
    }
    remote.pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = remote.pending.find('\n')) != std::string::npos) {
      std::string line = remote.pending.substr(0, newline);
      remote.pending.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (remote.port == 0 && (remote.port = ready_line_port(line)) > 0) continue;
      remote.last_line = line;
      if (forward) {
        std::fprintf(stderr, "hvdrun: agent on host %s: %s\n", remote.host.c_str(), line.c_str());
      }
    }
  }
}

void SshAgents::drain_loop() {
  while (!stopping_) {
    std::vector<pollfd> fds;
    for (auto& remote : remotes_) {
      for (int fd : {remote->stdout_fd, remote->stderr_fd}) {
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
      }
    }
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (auto& remote : remotes_) drain(*remote, true);
  }
}

void SshAgents::stop() {
  stopping_ = true;
  if (drainer_.joinable()) drainer_.join();
  for (auto& remote : remotes_) close_fd(remote->stdin_fd);
  const auto deadline = Clock::now() + kExitWait;
  for (auto& remote : remotes_) {
    if (remote->exited) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int status = 0;
    if (reap(remote->pid, std::max(left, std::chrono::milliseconds(0)), &status)) {
      remote->exited = true;
    }
  }
  for (int signo : {SIGTERM, SIGKILL}) {
    for (auto& remote : remotes_) {
      if (remote->exited) continue;
      ::kill(-remote->pid, signo);
      int status = 0;
      if (reap(remote->pid, kTermWait, &status)) remote->exited = true;
    }
  }
  for (auto& remote : remotes_) {
    close_fd(remote->stdout_fd);
    close_fd(remote->stderr_fd);
  }
  remotes_.clear();
}

}  // namespace hvd::launcher
