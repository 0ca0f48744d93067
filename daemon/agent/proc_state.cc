#include "daemon/agent/proc_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hvd::daemon {

const char* proc_state_name(ProcState state) {
  switch (state) {
    case ProcState::kRunning: return "running";
    case ProcState::kStopped: return "stopped";
    case ProcState::kGone: return "gone";
  }
  return "?";
}

ProcState parse_proc_stat(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos || paren + 2 >= stat.size() || stat[paren + 1] != ' ') {
    return ProcState::kGone;
  }
  switch (stat[paren + 2]) {
    case 'T':
    case 't': return ProcState::kStopped;
    case 'Z':
    case 'X':
    case 'x': return ProcState::kGone;
    default: return ProcState::kRunning;
  }
}

ProcState read_proc_state(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ProcState::kGone;
  // The state follows the pid and comm (at most 15 bytes in parentheses):
  // 512 bytes hold it.
  char buffer[512];
  ssize_t n = 0;
  do {
    n = ::read(fd, buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return ProcState::kGone;
  return parse_proc_stat(std::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace hvd::daemon
