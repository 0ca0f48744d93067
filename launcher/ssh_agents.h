// hvdrun --ssh: a job-scoped hvd-agent on every remote host, started over
// ssh. Each gets the job's fresh secret as the first line of its stdin
// (never argv, never a file) and stops when that stdin closes
// (--exit-on-stdin-eof), so it lives exactly as long as hvdrun's ssh.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "launcher/agent_targets.h"
#include "launcher/cli.h"

namespace hvd::launcher {

// The ssh argv that starts the agent on `host` (the remote command last).
std::vector<std::string> ssh_agent_argv(const LaunchOptions& options, const std::string& host);

// The ADDR:PORT of an agent's ready line ("... listening on ADDR:PORT"),
// as its port; 0 when `line` is not the ready line.
int ready_line_port(const std::string& line);

class SshAgents {
 public:
  SshAgents() = default;
  ~SshAgents() { stop(); }
  SshAgents(const SshAgents&) = delete;
  SshAgents& operator=(const SshAgents&) = delete;

  // Starts an agent for every remote target (call on the main thread: the
  // ssh processes die with the thread that forked them) and waits up to
  // `timeout` for every ready line; then sets each remote target's address
  // to HOST:PORT. The secret is generated here (secret()). kUnavailable
  // "cannot start the agent on host H over ssh: ..." otherwise.
  common::Status start(std::vector<AgentTarget>& targets, const LaunchOptions& options,
                       std::chrono::seconds timeout);
  const std::string& secret() const { return secret_; }

  // Closes every agent's stdin, waits a few seconds for the ssh processes,
  // then SIGTERM/SIGKILL their process groups. Idempotent.
  void stop();

 private:
  struct Remote {
    std::string host;
    pid_t pid = -1;
    int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
    std::string pending, last_line;
    int port = 0;
    bool exited = false;
    int status = 0;
  };
  bool drain(Remote& remote, bool forward);
  void drain_loop();

  std::string secret_;
  std::vector<std::unique_ptr<Remote>> remotes_;
  std::atomic<bool> stopping_{false};
  std::thread drainer_;
};

}  // namespace hvd::launcher
