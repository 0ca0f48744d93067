#include "daemon/agent/group_reaper.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace hvd::daemon {

namespace {

// The reaper's list and cgroup; written only in the forked child (its own copy).
pid_t g_groups[GroupReaper::kMaxGroups];
char g_cgroup[GroupReaper::kMaxCgroupPath + 32];
size_t g_cgroup_size = 0;

// Async-signal-safe from here to reaper_main's end.
void ignore(int sig) {
  struct sigaction action {};
  action.sa_handler = SIG_IGN;
  sigaction(sig, &action, nullptr);
}

void apply(char kind, pid_t pgid, int* count) {
  if (pgid <= 1) return;
  int at = -1;
  for (int i = 0; i < *count; ++i) {
    if (g_groups[i] == pgid) at = i;
  }
  if (kind == '+' && at < 0) {
    if (*count == GroupReaper::kMaxGroups) {  // drop the oldest
      for (int i = 1; i < *count; ++i) g_groups[i - 1] = g_groups[i];
      --*count;
    }
    g_groups[(*count)++] = pgid;
  } else if (kind == '-' && at >= 0) {
    g_groups[at] = g_groups[--*count];
  }
}

// g_cgroup + `file`, NUL-terminated, in `path` (sizeof g_cgroup).
void cgroup_file(const char* file, char* path) {
  size_t at = 0;
  for (; at < g_cgroup_size; ++at) path[at] = g_cgroup[at];
  for (; *file; ++file) path[at++] = *file;
  path[at] = '\0';
}

bool cgroup_populated() {
  char path[sizeof(g_cgroup)];
  cgroup_file("/cgroup.events", path);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[256];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* key = "populated 1";
  for (ssize_t i = 0; i + 11 <= n; ++i) {
    int j = 0;
    while (j < 11 && text[i + j] == key[j]) ++j;
    if (j == 11) return true;
  }
  return false;
}

// cgroup.kill, then rmdir once it is empty (within 2 s).
void end_cgroup() {
  if (g_cgroup_size == 0) return;
  char path[sizeof(g_cgroup)];
  cgroup_file("/cgroup.kill", path);
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    [[maybe_unused]] ssize_t n = write(fd, "1", 1);
    close(fd);
  }
  for (int i = 0; i < 400 && cgroup_populated(); ++i) {
    const timespec tick{0, 5'000'000};
    nanosleep(&tick, nullptr);
  }
  cgroup_file("", path);
  rmdir(path);
}

[[noreturn]] void reaper_main(int read_fd) {
  prctl(PR_SET_NAME, "hvd-reaper");  // in ps -o comm, apart from its parent
  setpgid(0, 0);                     // out of its parent's group (kill -9 -PGID)
  // Signals meant for hvdrun's process group (Ctrl-C) or for the agent are
  // not its business: it ends when the pipe does.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP}) {
    ignore(sig);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Nothing of the parent's stays open here but the pipe (a listening
  // socket or a worker's pipe would otherwise outlive the parent).
  if (read_fd != 3) {
    dup2(read_fd, 3);
    read_fd = 3;
  }
  close_range(4, ~0U, 0);
  int count = 0;
  char buffer[4096];
  char kind = 0;
  pid_t value = 0;
  bool in_cgroup_line = false;
  while (true) {
    const ssize_t n = read(read_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (in_cgroup_line) {  // "c<path>\n"
        if (c == '\n') {
          in_cgroup_line = false;
        } else if (g_cgroup_size < GroupReaper::kMaxCgroupPath) {
          g_cgroup[g_cgroup_size++] = c;
        }
      } else if (c == 'c') {
        in_cgroup_line = true;
        g_cgroup_size = 0;
      } else if (c == '+' || c == '-') {
        kind = c;
        value = 0;
      } else if (c == 'q') {
        _exit(0);  // stopped by its parent: nothing to kill
      } else if (c >= '0' && c <= '9') {
        value = value * 10 + (c - '0');
      } else if (c == '\n') {
        apply(kind, value, &count);
        kind = 0;
      }
    }
  }
  for (int i = 0; i < count; ++i) kill(-g_groups[i], SIGKILL);
  end_cgroup();
  _exit(0);
}

}  // namespace

void GroupReaper::start_locked() {
  int fds[2];
  // A socket rather than a pipe: a write to a reaper that died fails
  // (MSG_NOSIGNAL) instead of raising SIGPIPE in the agent.
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    spdlog::warn("no process-group reaper (socketpair: {}): a worker's children may outlive a "
                 "killed agent", std::strerror(errno));
    return;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    reaper_main(fds[0]);
  }
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    spdlog::warn("no process-group reaper (fork: {}): a worker's children may outlive a killed "
                 "agent", std::strerror(errno));
    return;
  }
  pid_ = pid;
  write_fd_ = fds[1];
  if (!cgroup_.empty()) send_text_locked("c" + cgroup_ + "\n");
}

void GroupReaper::stop() {
  std::lock_guard lock(mu_);
  if (write_fd_ >= 0) {
    // A clean stop kills nothing (a group started meanwhile must live);
    // only a socket that ends without 'q' means the parent is gone.
    while (::send(write_fd_, "q", 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    close(write_fd_);
  }
  write_fd_ = -1;
  if (pid_ <= 0) return;
  const pid_t pid = pid_;
  pid_ = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (true) {
    const pid_t r = waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void GroupReaper::send_locked(char kind, pid_t pgid) {
  char line[32];
  const int n = std::snprintf(line, sizeof(line), "%c%d\n", kind, static_cast<int>(pgid));
  send_text_locked(std::string_view(line, static_cast<size_t>(n)));
}

void GroupReaper::send_text_locked(std::string_view text) {
  while (write_fd_ >= 0 && !text.empty()) {
    const ssize_t n = ::send(write_fd_, text.data(), text.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reaper is gone
    text.remove_prefix(static_cast<size_t>(n));
  }
}

void GroupReaper::add(pid_t pgid) {
  std::lock_guard lock(mu_);
  if (pid_ <= 0) start_locked();
  send_locked('+', pgid);
}

void GroupReaper::set_cgroup(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (dir.size() > kMaxCgroupPath || dir.find('\n') != std::string::npos) {
    spdlog::warn("the cgroup {} is not guarded if this process is killed: its path is too long",
                 dir);
    return;
  }
  cgroup_ = dir;
  send_text_locked("c" + cgroup_ + "\n");
}

void GroupReaper::remove(pid_t pgid) {
  std::lock_guard lock(mu_);
  send_locked('-', pgid);
}

pid_t GroupReaper::pid() const {
  std::lock_guard lock(mu_);
  return pid_;
}

}  // namespace hvd::daemon
