#include "daemon/agent/containment.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "daemon/agent/job_cgroup.h"

namespace hvd::daemon {

namespace {

std::mutex g_mu;
std::optional<Containment> g_current;

std::string errno_text(int err) { return strerrordesc_np(err) ? strerrordesc_np(err) : "error"; }

// Whether a process can be moved into a cgroup made in `parent`: makes one,
// moves a short-lived child into it, removes it.
common::Status probe_cgroup(const std::string& parent) {
  auto probe = JobCgroup::create(parent, own_cgroup_prefix() + "probe");
  if (!probe.is_ok()) return probe.status();
  if (::access(((*probe)->path() + "/cgroup.kill").c_str(), W_OK) != 0) {
    return common::unavailable("no cgroup.kill in " + (*probe)->path() +
                               " (it needs Linux 5.14 or later)");
  }
  const int fd = (*probe)->procs_fd();
  const pid_t pid = ::fork();
  if (pid == 0) _exit(::write(fd, "0", 1) == 1 ? 0 : (errno & 0xff));
  if (pid < 0) return common::unavailable("cannot fork a probe: " + errno_text(errno));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int err = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
    return common::unavailable("cannot move a process into a cgroup made in " + parent + ": " +
                               errno_text(err));
  }
  return common::Status::ok();
}

}  // namespace

common::Result<ContainmentMode> parse_containment_mode(std::string_view text) {
  if (text == "auto") return ContainmentMode::kAuto;
  if (text == "cgroup") return ContainmentMode::kCgroup;
  if (text == "subreaper") return ContainmentMode::kSubreaper;
  return common::invalid_argument("'" + std::string(text) +
                                  "': expected auto, cgroup or subreaper");
}

std::string Containment::describe() const {
  if (cgroup) return "cgroup (a cgroup v2 per job in " + cgroup_parent + ")";
  return "subreaper (" + reason + ")";
}

common::Result<Containment> detect_containment(ContainmentMode mode, std::string_view source) {
  Containment out;
  if (mode == ContainmentMode::kSubreaper) {
    out.reason = std::string(source) + "subreaper";
    return out;
  }
  auto parent = own_cgroup_dir();
  common::Status usable = parent.is_ok() ? probe_cgroup(*parent) : parent.status();
  if (usable.is_ok()) {
    out.cgroup = true;
    out.cgroup_parent = *parent;
    remove_stale_cgroups(out.cgroup_parent);
    return out;
  }
  if (mode == ContainmentMode::kCgroup) {
    return common::failed_precondition(std::string(source) +
                                       "cgroup: cgroup v2 cannot be used: " + usable.message());
  }
  out.reason = "cgroup v2 cannot be used: " + usable.message();
  return out;
}

common::Result<Containment> configure_containment(ContainmentMode mode, std::string_view source) {
  auto detected = detect_containment(mode, source);
  if (detected.is_ok()) set_current_containment(*detected);
  return detected;
}

common::Result<Containment> configure_containment_from_environment() {
  {
    std::lock_guard lock(g_mu);
    if (g_current) return *g_current;
  }
  const char* value = std::getenv(kContainmentEnv);
  ContainmentMode mode = ContainmentMode::kAuto;
  const std::string source = std::string(kContainmentEnv) + "=";
  if (value && *value) {
    auto parsed = parse_containment_mode(value);
    if (!parsed.is_ok()) return common::invalid_argument(source + parsed.status().message());
    mode = *parsed;
  }
  return configure_containment(mode, source);
}

Containment current_containment() {
  {
    std::lock_guard lock(g_mu);
    if (g_current) return *g_current;
  }
  auto configured = configure_containment_from_environment();
  if (configured.is_ok()) return *configured;
  spdlog::warn("{}; containment: auto", configured.status().message());
  return configure_containment(ContainmentMode::kAuto, "").value();  // auto never fails
}

void set_current_containment(Containment containment) {
  std::lock_guard lock(g_mu);
  g_current = std::move(containment);
}

std::unique_ptr<JobCgroup> make_job_cgroup(const Containment& containment) {
  static std::atomic<uint64_t> made{0};
  if (!containment.cgroup) return nullptr;
  auto cgroup =
      JobCgroup::create(containment.cgroup_parent, own_cgroup_prefix() + std::to_string(made++));
  if (cgroup.is_ok()) return std::move(cgroup).value();
  spdlog::warn("{}: this job's workers run under keepers (subreapers) instead",
               cgroup.status().message());
  return nullptr;
}

}  // namespace hvd::daemon
