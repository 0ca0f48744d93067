#include "common/input_file.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

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

}  // namespace

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
