#include "runtime/discovery/command_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

extern char** environ;

namespace hvd::runtime {

namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) text += (text.empty() ? "" : " ") + a;
  return "'" + text + "'";
}

// Kills the child and waits for it.
void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// The child's wait status once it exits; nullopt (it is then killed) when it
// is still running at `deadline` (it closed its output but goes on).
std::optional<int> reap_by(pid_t pid, Clock::time_point deadline) {
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return status;  // not our child any more: nothing to wait for
    if (Clock::now() >= deadline) {
      kill_and_reap(pid);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

common::Status timed_out(const std::string& what, std::chrono::milliseconds timeout) {
  return common::timeout_error(what + " did not finish within " +
                               std::to_string(timeout.count()) + " ms");
}

}  // namespace

common::Result<std::string> command_output(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout) {
  if (argv.empty()) return common::invalid_argument("no command to run");
  const std::string what = command_text(argv);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return common::unavailable("cannot run " + what + ": pipe: " + std::strerror(errno));
  }
  Fd read_end(fds[0]), write_end(fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return common::not_found("cannot run " + what + ": " + std::strerror(spawned));
  }
  write_end.reset();

  std::string output;
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      kill_and_reap(pid);
      return timed_out(what, timeout);
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends it
    const ssize_t n = ready < 0 ? -1 : read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output (or an error reading it)
    output.append(buffer, static_cast<size_t>(std::min(static_cast<size_t>(n),
                                                       kMaxCommandOutput - output.size())));
  }
  const auto reaped = reap_by(pid, deadline);
  if (!reaped) return timed_out(what, timeout);
  const int status = *reaped;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return output;
  if (WIFEXITED(status)) {
    return common::unavailable(what + " exited with " + std::to_string(WEXITSTATUS(status)));
  }
  return common::unavailable(what + " died of signal " + std::to_string(WTERMSIG(status)));
}

}  // namespace hvd::runtime
