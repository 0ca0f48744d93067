#include "tests/unit/daemon/agent/containment_util.h"

#include <catch2/catch.hpp>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "tests/unit/daemon/test_util.h"

namespace hvd::daemon::test {

std::vector<Containment> containments() {
  std::vector<Containment> out;
  auto cgroup = detect_containment(ContainmentMode::kCgroup, "");
  if (cgroup.is_ok()) {
    out.push_back(*cgroup);
  } else {
    WARN("cgroup containment not tested: " << cgroup.status().message());
  }
  out.push_back(detect_containment(ContainmentMode::kSubreaper, "test ").value());
  return out;
}

ContainmentScope::ContainmentScope(const Containment& containment)
    : saved_(current_containment()) {
  set_current_containment(containment);
}

ContainmentScope::~ContainmentScope() { set_current_containment(saved_); }

std::string unique_token() {
  static std::atomic<int> n{0};
  return "hvdct" + std::to_string(::getpid()) + "x" + std::to_string(n++);
}

common::ProcessSpec leave_children(const std::string& token, int rank,
                                   const std::string& action) {
  auto spec = spec_of({"bash", HVD_LEAVE_CHILDREN, token, action}, rank);
  spec.env["HVD_RANK"] = std::to_string(rank);
  return spec;
}

std::vector<pid_t> left_of_kind(const std::string& prefix, const std::string& kind) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  const std::string suffix = "-" + kind;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    // argv[0]; read with read(2): a process may vanish meanwhile (ESRCH).
    const int fd = ::open((std::string("/proc/") + entry->d_name + "/cmdline").c_str(),
                          O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[256];
    const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const std::string name = buf;
    if (name.rfind(prefix + "-", 0) != 0) continue;
    if (!kind.empty() && (name.size() < suffix.size() ||
                          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::atol(entry->d_name));
    if (!process_gone(pid)) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

void check_none_left(const std::string& token, std::chrono::milliseconds timeout) {
  eventually([&] { return left_of_kind(token, "").empty(); }, timeout);
  for (const char* kind : kChildKinds) {
    INFO("child kind: " << kind);
    CHECK(left_of_kind(token, kind).empty());
  }
}

}  // namespace hvd::daemon::test
