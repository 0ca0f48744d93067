#include "common/child_keeper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <initializer_list>

// Everything here runs in a process forked from a multi-threaded one:
// system calls only, no allocation, no locks.

namespace hvd::common::detail {

namespace {

// How long the keeper goes on killing what is left before it gives up (a
// process stuck in the kernel, state D, dies only when its I/O ends).
constexpr int64_t kEndAllMs = 10'000;

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void sleep_ms(long ms) {
  timespec ts{0, ms * 1'000'000L};
  nanosleep(&ts, nullptr);
}

bool parse_pid(const char* text, pid_t* out) {
  if (*text == '\0') return false;
  long value = 0;
  for (; *text; ++text) {
    if (*text < '0' || *text > '9' || value > 100'000'000) return false;
    value = value * 10 + (*text - '0');
  }
  *out = static_cast<pid_t>(value);
  return true;
}

// The parent of /proc/<pid>, or -1. The command name in parentheses may
// hold anything: the fields follow the last ')'.
pid_t parent_of(const char* pid) {
  char path[48] = "/proc/";
  size_t at = 6;
  for (const char* c = pid; *c && at < sizeof(path) - 6; ++c) path[at++] = *c;
  for (const char* c = "/stat"; *c; ++c) path[at++] = *c;
  path[at] = '\0';
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* close_paren = nullptr;
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == ')') close_paren = buf + i;
  }
  if (!close_paren) return -1;
  // ") S PPID ..."
  const char* p = close_paren + 1;
  while (*p == ' ') ++p;
  if (*p == '\0') return -1;
  ++p;  // the state
  while (*p == ' ') ++p;
  long ppid = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p, digits = true) ppid = ppid * 10 + (*p - '0');
  return digits ? static_cast<pid_t>(ppid) : -1;
}

// The kernel's struct linux_dirent64.
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// SIGKILLs every child of `self` (from /proc).
void kill_children(pid_t self) {
  const int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  alignas(8) char buf[8192];
  for (;;) {
    const long n = syscall(SYS_getdents64, proc, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const Dirent64*>(buf + off);
      off += entry->reclen;
      pid_t pid = 0;
      if (!parse_pid(entry->name, &pid) || pid == self) continue;
      if (parent_of(entry->name) == self) kill(pid, SIGKILL);
    }
  }
  close(proc);
}

// SIGKILLs every process under this one and reaps them. Killing a child
// makes its own children orphans, which the kernel hands to this process
// (a subreaper) before the child can be reaped: kill, reap, look again,
// until no child is left (or kEndAllMs passed). The worker's status, when
// it is among the reaped, goes to `worker_status`.
void end_all(pid_t worker, int* worker_status, bool* worker_done) {
  const pid_t self = getpid();
  const int64_t deadline = now_ms() + kEndAllMs;
  for (;;) {
    kill_children(self);
    bool reaped = false;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(-1, &status, WNOHANG);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return;  // ECHILD: nothing left
      if (r == 0) break;
      if (r == worker) {
        *worker_status = status;
        *worker_done = true;
      }
      reaped = true;
    }
    if (reaped) continue;
    if (now_ms() >= deadline) return;
    sleep_ms(2);
  }
}

// Exits as the worker did: with its exit code, or killed by its signal
// (without a core file of the keeper's own).
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

[[noreturn]] void keeper_main(pid_t caller, pid_t worker) {
  // Every signal stays blocked; these are taken with sigtimedwait.
  sigset_t wanted;
  sigemptyset(&wanted);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&wanted, sig);
  int status = 0;
  bool worker_done = false;
  bool told_to_end = false;
  while (!worker_done && !told_to_end) {
    timespec tick{1, 0};  // also notices a parent gone without the signal
    const int sig = sigtimedwait(&wanted, nullptr, &tick);
    for (;;) {  // adopted orphans that ended, and the worker
      int st = 0;
      const pid_t r = waitpid(-1, &st, WNOHANG);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      if (r == worker) {
        status = st;
        worker_done = true;
      }
    }
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || getppid() != caller) {
      told_to_end = true;
    }
  }
  end_all(worker, &status, &worker_done);
  if (!worker_done) status = SIGKILL;  // a wait status: killed by SIGKILL
  exit_like(status);
}

}  // namespace

pid_t split_keeper(pid_t caller, int report_fd, int devnull_fd) {
  setpgid(0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != caller) _exit(127);  // the caller died before prctl
  prctl(PR_SET_NAME, "hvd-keeper");     // in ps -o comm
  // Children must be waited for here (the caller may ignore SIGCHLD).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &dfl, nullptr);
  const pid_t self = getpid();
  const pid_t worker = fork();
  if (worker == 0) {
    close(report_fd);
    return self;
  }
  if (worker < 0) {
    const int32_t failed = -errno;
    [[maybe_unused]] ssize_t n = write(report_fd, &failed, sizeof(failed));
    _exit(127);
  }
  setpgid(worker, worker);  // as the worker does: the group exists before the caller hears of it
  const int32_t reported = worker;
  [[maybe_unused]] ssize_t n = write(report_fd, &reported, sizeof(reported));
  // Nothing of the caller's stays open here (a listening socket, a pipe of
  // another process, the caller's stdout).
  dup2(devnull_fd, STDIN_FILENO);
  dup2(devnull_fd, STDOUT_FILENO);
  dup2(devnull_fd, STDERR_FILENO);
  close_range(3, ~0U, 0);
  keeper_main(caller, worker);
}

}  // namespace hvd::common::detail
