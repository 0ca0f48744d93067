#include "common/input_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/printable.h"

namespace hvd::common {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a wait looks for a pending stop signal.
constexpr milliseconds kSlice{100};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A SIGINT, SIGTERM or SIGHUP that the program blocks and that is pending
// now takes its default action (ends the program) at once. Should a handler
// return instead, the mask is as it was.
void deliver_pending_stop_signals() {
  sigset_t pending;
  sigemptyset(&pending);
  if (::sigpending(&pending) != 0) return;
  sigset_t deliver;
  sigemptyset(&deliver);
  bool any = false;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) {
    if (sigismember(&pending, signo) == 1) {
      sigaddset(&deliver, signo);
      any = true;
    }
  }
  if (!any) return;
  ::pthread_sigmask(SIG_UNBLOCK, &deliver, nullptr);
  ::pthread_sigmask(SIG_BLOCK, &deliver, nullptr);
}

std::string seconds_text(milliseconds ms) {
  const auto count = ms.count();
  return count % 1000 == 0 ? std::to_string(count / 1000) + " s" : std::to_string(count) + " ms";
}

std::string size_text(size_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO or pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// Waits until `fd` has data or an end, up to `deadline`, delivering stop
// signals meanwhile. kTimeout (`late` as its message) when the deadline passes.
Status wait_readable(int fd, Clock::time_point deadline, const std::string& where,
                     const std::string& late) {
  for (;;) {
    deliver_pending_stop_signals();
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return timeout_error(late);
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, kSlice).count()));
    if (ready < 0 && errno != EINTR) {
      return not_found("cannot read " + where + ": " + std::strerror(errno));
    }
    if (ready > 0) {
      if ((p.revents & POLLNVAL) != 0) return not_found("cannot read " + where + ": not open");
      return Status::ok();
    }
  }
}

// Whether /proc/self/mountinfo says that the device `dev` is /dev: a
// devtmpfs, or a tmpfs mounted on /dev (containers). A line reads
// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw".
bool is_dev_filesystem(dev_t dev) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  const std::string device = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, numbers, root, mount_point;
    if (!(fields >> id >> parent >> numbers >> root >> mount_point) || numbers != device) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream rest(line.substr(dash + 3));
    std::string type;
    rest >> type;
    if (type == "devtmpfs" || mount_point == "/dev") return true;
  }
  return false;
}

// The refusal of a file on one of the kernel's pseudo filesystems: what it
// reads is made up by the kernel (/proc/self/environ: the reader's own
// environment), never a secret anyone made.
std::string not_a_real_file(const std::string& where, const std::string& filesystem) {
  return where + " is on the kernel's " + filesystem +
         " filesystem, not on disk: what it holds is the kernel's (an environment, a setting), "
         "not a secret or key someone made; use a regular file on disk";
}

}  // namespace

std::string pseudo_filesystem(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return "";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC: return "proc";
    case SYSFS_MAGIC: return "sysfs";
    case DEBUGFS_MAGIC: return "debugfs";
    case TRACEFS_MAGIC: return "tracefs";
    case SECURITYFS_MAGIC: return "securityfs";
    case SELINUX_MAGIC: return "selinuxfs";
    case SMACK_MAGIC: return "smackfs";
    case CGROUP_SUPER_MAGIC: return "cgroup";
    case CGROUP2_SUPER_MAGIC: return "cgroup2";
    case BPF_FS_MAGIC: return "bpf";
    case PSTOREFS_MAGIC: return "pstore";
    case EFIVARFS_MAGIC: return "efivarfs";
    case DEVPTS_SUPER_MAGIC: return "devpts";
    case BINFMTFS_MAGIC: return "binfmt_misc";
    case NSFS_MAGIC: return "nsfs";
    case 0x62656570: return "configfs";  // CONFIGFS_MAGIC, not in every linux/magic.h
    case 0x65735543: return "fusectl";   // FUSE_CTL_SUPER_MAGIC
    case TMPFS_MAGIC: {
      // /dev is a devtmpfs (a tmpfs in containers), which reports tmpfs's
      // magic; another tmpfs (/tmp, /run, a Kubernetes secret volume) is fine.
      struct stat st {};
      if (::fstat(fd, &st) == 0 && is_dev_filesystem(st.st_dev)) return "/dev";
      return "";
    }
    default: return "";
  }
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Result<std::string> read_input_file(const std::string& path, const InputRules& rules) {
  const std::string where = rules.what + " '" + printable(path) + "'";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) return not_found("cannot open " + where + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return not_found("cannot stat " + where + ": " + std::strerror(errno));
  }
  const bool pipe = S_ISFIFO(st.st_mode) && rules.allow_pipe && !rules.private_file;
  if (!S_ISREG(st.st_mode) && !pipe) {
    return invalid_argument(where + " is not a regular file (" + kind_of(st.st_mode) + ")");
  }
  if (rules.private_file || rules.real_file) {
    const std::string filesystem = pseudo_filesystem(fd.get());
    if (!filesystem.empty()) return invalid_argument(not_a_real_file(where, filesystem));
  }
  if (rules.private_file) {
    if ((st.st_mode & 077) != 0) {
      return invalid_argument(where + " has mode " + octal_mode(st.st_mode) +
                              ": others can read it; run chmod 600 on it");
    }
    const uid_t me = ::geteuid();
    if (st.st_uid != me && st.st_uid != 0) {
      return invalid_argument(where + " is owned by uid " + std::to_string(st.st_uid) +
                              ": only files of this user (uid " + std::to_string(me) +
                              ") or root are trusted; chown it");
    }
  }
  const auto deadline = Clock::now() + rules.timeout;
  const std::string late = where + ": no end of input within " + seconds_text(rules.timeout) +
                           " (a pipe nobody writes to?)";
  std::string text;
  char buffer[4096];
  for (;;) {
    if (pipe) HVD_RETURN_IF_ERROR(wait_readable(fd.get(), deadline, where, late));
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return not_found("cannot read " + where + ": " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > rules.max_bytes) {
      return invalid_argument(where + " is larger than " + size_text(rules.max_bytes));
    }
  }
}

Result<std::string> read_line_within(int fd, const std::string& what,
                                     std::chrono::milliseconds timeout, size_t max_bytes) {
  const auto deadline = Clock::now() + timeout;
  const std::string late = what + ": no line within " + seconds_text(timeout);
  std::string line;
  for (;;) {
    HVD_RETURN_IF_ERROR(wait_readable(fd, deadline, what, late));
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return not_found("cannot read " + what + ": " + std::strerror(errno));
    if (n == 0 || c == '\n') return line;
    line += c;
    if (line.size() > max_bytes) {
      return invalid_argument(what + " is longer than " + size_text(max_bytes));
    }
  }
}

}  // namespace hvd::common
