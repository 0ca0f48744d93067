#include "common/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/child_keeper.h"

namespace hvd::common {

namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
// For a keeper to say which pid the command got (two forks).
constexpr int kKeeperReportMs = 20'000;

std::string errno_text(int err) { return strerrordesc_np(err) ? strerrordesc_np(err) : "error"; }

Status cannot_execute(const std::string& arg0, bool found_but_denied) {
  if (found_but_denied) {
    return common::failed_precondition("cannot execute '" + arg0 + "': permission denied");
  }
  return common::not_found("cannot execute '" + arg0 + "': command not found");
}

// Relative paths are looked up from the directory the child will run in.
std::string as_seen_by_child(const std::string& path, const std::string& cwd) {
  if (path.empty() || path.front() == '/' || cwd.empty()) return path;
  return cwd + "/" + path;
}

enum class Probe { kMissing, kNotExecutable, kExecutable };

Probe probe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Probe::kMissing;
  if (!S_ISREG(st.st_mode)) return Probe::kNotExecutable;
  if (::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) != 0) return Probe::kNotExecutable;
  return Probe::kExecutable;
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

Status check_spec(const ProcessSpec& spec) {
  if (spec.argv.empty()) return common::invalid_argument("empty command line");
  if (spec.argv[0].empty()) return common::invalid_argument("empty command name");
  for (const auto& arg : spec.argv) {
    if (has_nul(arg)) return common::invalid_argument("command argument contains a NUL byte");
  }
  for (const auto& [key, value] : spec.env) {
    if (key.empty() || key.find('=') != std::string::npos || has_nul(key) || has_nul(value)) {
      return common::invalid_argument("invalid environment variable name '" + key + "'");
    }
  }
  if (!spec.cwd.empty()) {
    struct stat st {};
    if (::stat(spec.cwd.c_str(), &st) != 0) {
      return common::not_found("cannot change to directory '" + spec.cwd +
                               "': " + errno_text(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
      return common::failed_precondition("cannot change to directory '" + spec.cwd +
                                         "': not a directory");
    }
  }
  return Status::ok();
}

// Everything the child needs, prepared before fork: after it, only
// async-signal-safe calls are allowed.
struct ExecPlan {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string exec_error_prefix;
  std::string chdir_error_prefix;
  std::string cgroup_error_prefix;
};

ExecPlan make_plan(const ProcessSpec& spec) {
  ExecPlan plan;
  for (const auto& [key, value] : spec.env) plan.env_strings.push_back(key + "=" + value);
  for (const auto& arg : spec.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  for (auto& s : plan.env_strings) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.exec_error_prefix = "hvd: cannot execute '" + spec.argv[0] + "': ";
  plan.chdir_error_prefix = "hvd: cannot change to directory '" + spec.cwd + "': ";
  plan.cgroup_error_prefix = "hvd: cannot move '" + spec.argv[0] + "' into the job's cgroup: ";
  return plan;
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

[[noreturn]] void report_and_exit(const std::string& prefix, int err) {
  write_all(STDERR_FILENO, prefix.data(), prefix.size());
  const char* what = strerrordesc_np(err);
  if (what) write_all(STDERR_FILENO, what, strlen(what));
  write_all(STDERR_FILENO, "\n", 1);
  _exit(err == EACCES ? 126 : 127);
}

[[noreturn]] void child_main(const ExecPlan& plan, const std::string& path, const std::string& cwd,
                             pid_t parent, int devnull_fd, int out_fd, int err_fd, long max_fd,
                             int cgroup_procs_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(127);  // the parent died before prctl
  // Every signal is blocked (see start_child) until the parent's handlers
  // are gone: a signal that comes now must not run them in this process.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(devnull_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
      ::dup2(err_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  // "0": the writing process. Before exec, so nothing it starts is outside.
  if (cgroup_procs_fd >= 0 && ::write(cgroup_procs_fd, "0", 1) != 1) {
    report_and_exit(plan.cgroup_error_prefix, errno);
  }
  if (::close_range(3, ~0U, 0) != 0) {
    for (long fd = 3; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
  }
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) report_and_exit(plan.chdir_error_prefix, errno);
  ::execve(path.c_str(), plan.argv.data(), plan.envp.data());
  report_and_exit(plan.exec_error_prefix, errno);
}

Result<std::pair<UniqueFd, UniqueFd>> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return common::internal_error("cannot create a pipe: " + errno_text(errno));
  }
  UniqueFd read_end = above_stdio(fds[0]);
  UniqueFd write_end = above_stdio(fds[1]);
  if (!read_end.valid() || !write_end.valid()) {
    return common::internal_error("cannot duplicate a pipe: " + errno_text(errno));
  }
  return std::make_pair(std::move(read_end), std::move(write_end));
}

// The command's pid as the keeper `keeper` reports it on `fd`.
Result<pid_t> keeper_report(int fd, pid_t keeper) {
  pollfd p{fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, kKeeperReportMs);
  } while (ready < 0 && errno == EINTR);
  int32_t value = 0;
  ssize_t n = -1;
  if (ready > 0) {
    do {
      n = ::read(fd, &value, sizeof(value));
    } while (n < 0 && errno == EINTR);
  }
  if (n == static_cast<ssize_t>(sizeof(value)) && value > 0) return static_cast<pid_t>(value);
  std::string why = "it exited without a word";
  if (ready == 0) why = "no answer within " + std::to_string(kKeeperReportMs / 1000) + " s";
  if (n == static_cast<ssize_t>(sizeof(value)) && value < 0) why = "fork: " + errno_text(-value);
  return common::internal_error("cannot start the process under its keeper (pid " +
                                std::to_string(keeper) + "): " + why);
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() { return std::exchange(fd_, -1); }

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

UniqueFd above_stdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return UniqueFd(fd);
  int high = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return UniqueFd(high);
}

Result<std::string> resolve_command(const ProcessSpec& spec) {
  HVD_RETURN_IF_ERROR(check_spec(spec));
  const std::string& arg0 = spec.argv[0];
  if (arg0.find('/') != std::string::npos) {
    switch (probe(as_seen_by_child(arg0, spec.cwd))) {
      case Probe::kExecutable: return arg0;
      case Probe::kNotExecutable: return cannot_execute(arg0, true);
      case Probe::kMissing: return cannot_execute(arg0, false);
    }
  }
  auto it = spec.env.find("PATH");
  const std::string path_list = it != spec.env.end() ? it->second : kDefaultPath;
  bool denied = false;
  size_t begin = 0;
  for (;;) {
    size_t end = path_list.find(':', begin);
    std::string dir = path_list.substr(begin, end == std::string::npos ? end : end - begin);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + arg0;
    switch (probe(as_seen_by_child(candidate, spec.cwd))) {
      case Probe::kExecutable: return candidate;
      case Probe::kNotExecutable: denied = true; break;
      case Probe::kMissing: break;
    }
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return cannot_execute(arg0, denied);
}

Result<StartedChild> start_child(const ProcessSpec& spec, const std::string& path,
                                 int devnull_fd, const StartOptions& options) {
  auto out = make_pipe();
  if (!out.is_ok()) return out.status();
  auto err = make_pipe();
  if (!err.is_ok()) return err.status();
  UniqueFd report_read, report_write;  // the keeper's word: the command's pid
  if (options.keeper) {
    auto report = make_pipe();
    if (!report.is_ok()) return report.status();
    report_read = std::move(report->first);
    report_write = std::move(report->second);
  }
  const ExecPlan plan = make_plan(spec);
  const long max_fd = ::sysconf(_SC_OPEN_MAX) > 0 ? ::sysconf(_SC_OPEN_MAX) : 65536;
  const pid_t parent = ::getpid();

  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const pid_t exec_parent =
        options.keeper ? detail::split_keeper(parent, report_write.get(), devnull_fd) : parent;
    child_main(plan, path, spec.cwd, exec_parent, devnull_fd, out->second.get(),
               err->second.get(), max_fd, options.cgroup_procs_fd);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (pid < 0) return common::internal_error("cannot fork: " + errno_text(fork_errno));
  // Both sides call setpgid so that the group exists before either goes on;
  // EACCES here only means the child has already called execve.
  ::setpgid(pid, pid);

  StartedChild child;
  child.pid = pid;
  child.wait_pid = pid;
  if (options.keeper) {
    report_write.reset();
    auto command = keeper_report(report_read.get(), pid);
    if (!command.is_ok()) {
      ::kill(pid, SIGKILL);  // it has started nothing that outlives it
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return command.status();
    }
    child.pid = *command;
  }
  // glibc 2.36's <sys/pidfd.h> lacks extern "C": call the kernel directly.
  child.pidfd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, child.wait_pid, 0)));
  child.stdout_fd = std::move(out->first);
  child.stderr_fd = std::move(err->first);
  for (int fd : {child.stdout_fd.get(), child.stderr_fd.get()}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

}  // namespace hvd::common
