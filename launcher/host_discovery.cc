#include "launcher/host_discovery.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <map>
#include <set>

#include "common/job_limits.h"
#include "common/printable.h"
#include "common/child_process.h"
#include "launcher/worker_environment.h"

namespace hvd::launcher {

namespace {

using Clock = std::chrono::steady_clock;

std::string prefix(std::string_view script) {
  return "--host-discovery-script " + common::printable(script) + ": ";
}

// What a script may print on stdout or stderr; more is an error, not memory.
constexpr size_t kMaxOutputBytes = 16 << 20;

// Reads both pipes until they close or the deadline passes.
bool read_all(int out_fd, int err_fd, Clock::time_point deadline, std::string& out,
              std::string& err) {
  int fds_open[2] = {out_fd, err_fd};
  std::string* sinks[2] = {&out, &err};
  char buf[4096];
  while (fds_open[0] >= 0 || fds_open[1] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (fds_open[i] < 0) continue;
      fds[n] = {fds_open[i], POLLIN, 0};
      which[n++] = i;
    }
    int ready = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return false;
    for (int k = 0; k < n; ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t got = ::read(fds[k].fd, buf, sizeof(buf));
      if (got > 0) {
        // Past the limit the rest is read and dropped, so that the script
        // does not block on a full pipe (the caller sees the size).
        std::string& sink = *sinks[which[k]];
        if (sink.size() <= kMaxOutputBytes) sink.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        fds_open[which[k]] = -1;
      }
    }
  }
  return true;
}

std::string last_line(const std::string& text) {
  std::string_view t = trim(text);
  size_t nl = t.rfind('\n');
  return common::printable(trim(nl == std::string_view::npos ? t : t.substr(nl + 1)));
}

}  // namespace

common::Result<std::vector<HostSlots>> parse_discovery_output(std::string_view text,
                                                              int default_slots,
                                                              std::string_view script,
                                                              bool need_hosts) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view raw = text.substr(start, end == std::string_view::npos ? end : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    // `why` is escaped already where it quotes the line.
    auto bad = [&](const std::string& why) {
      return common::invalid_argument(prefix(script) + "line " + std::to_string(line_no) + " '" +
                                      common::printable(line) + "': " + why);
    };
    if (line.find_first_of(" \t,") != std::string_view::npos) {
      return bad("expected one host or host:slots per line");
    }
    auto host = parse_host_token(line, default_slots);
    if (!host.is_ok()) return bad(host.status().message());
    if (host->slots > common::kMaxWorkersPerHost) {  // the default: the token's own are checked
      return bad("--slots-per-host " + std::to_string(host->slots) +
                 " is more than one host runs (at most " +
                 std::to_string(common::kMaxWorkersPerHost) + ")");
    }
    if (!seen.insert(host->host).second) {
      return bad("host '" + common::printable(host->host) + "' is listed twice");
    }
    hosts.push_back(std::move(host).value());
  }
  if (hosts.empty() && need_hosts) {
    return common::invalid_argument(prefix(script) + "printed no hosts");
  }
  return hosts;
}

common::Result<std::vector<HostSlots>> run_host_discovery(const std::string& script,
                                                          int default_slots,
                                                          std::chrono::milliseconds timeout,
                                                          bool need_hosts) {
  const Environment env = current_environment();
  common::ProcessSpec spec{0, {script}, std::map<std::string, std::string>(env.begin(), env.end()),
                           ""};
  auto path = common::resolve_command(spec);
  if (!path.is_ok()) return common::invalid_argument(prefix(script) + path.status().message());
  common::UniqueFd devnull = common::above_stdio(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  auto child = common::start_child(spec, *path, devnull.get());
  if (!child.is_ok()) return common::invalid_argument(prefix(script) + child.status().message());
  std::string out, err;
  const bool finished = read_all(child->stdout_fd.get(), child->stderr_fd.get(),
                                 Clock::now() + timeout, out, err);
  if (!finished) ::kill(-child->pid, SIGKILL);  // its own process group
  int status = 0;
  while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    const auto ms = timeout.count();
    return common::invalid_argument(prefix(script) + "did not finish within " +
                                    (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s"
                                                    : std::to_string(ms) + " ms"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    std::string said = last_line(err);
    return common::invalid_argument(prefix(script) + why + (said.empty() ? "" : ": " + said));
  }
  if (out.size() > kMaxOutputBytes) {
    return common::invalid_argument(prefix(script) + "printed more than " +
                                    std::to_string(kMaxOutputBytes >> 20) + " MiB");
  }
  return parse_discovery_output(out, default_slots, script, need_hosts);
}

}  // namespace hvd::launcher
