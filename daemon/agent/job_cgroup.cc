#include "daemon/agent/job_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace hvd::daemon {

namespace {

using std::chrono::milliseconds;

// For the processes of a cgroup of a gone maker to die before it is removed.
constexpr milliseconds kStaleWait{1'000};
// For a job's processes to die when its cgroup is removed.
constexpr milliseconds kRemoveWait{2'000};

std::string errno_text(int err) { return strerrordesc_np(err) ? strerrordesc_np(err) : "error"; }

// mountinfo escapes ' ', '\t', '\n' and '\\' as octal ("\040").
std::string unescape_mount_field(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string digits = field.substr(i + 1, 3);
      int value = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + 3, value, 8);
      if (ec == std::errc() && end == digits.data() + 3) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// A small file's text ("" when it cannot be read).
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_text(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
// after boot; "" when there is no such process.
std::string start_time_of(const std::string& pid) {
  const std::string stat = read_text("/proc/" + pid + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // fields 3 (state) to 22 (starttime)
    if (!(fields >> field)) return "";
  }
  return field;
}

bool is_populated(const std::string& dir) {
  return read_text(dir + "/cgroup.events").find("populated 1") != std::string::npos;
}

bool wait_empty(const std::string& dir, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (is_populated(dir)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

}  // namespace

common::Result<std::string> own_cgroup_dir() {
  // "0::/user.slice/session-2.scope": the cgroup v2 line.
  std::string path;
  {
    std::ifstream cgroup("/proc/self/cgroup");
    std::string line;
    while (std::getline(cgroup, line)) {
      if (line.rfind("0::", 0) == 0) path = line.substr(3);
    }
  }
  if (path.empty() || path.front() != '/') {
    return common::unavailable("this process is in no cgroup v2 (/proc/self/cgroup)");
  }
  // "36 25 0:30 / /sys/fs/cgroup rw,... - cgroup2 cgroup2 rw,...".
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::vector<std::string> before;
    std::string field;
    while (fields >> field && field != "-") before.push_back(field);
    std::string fstype;
    fields >> fstype;
    if (fstype != "cgroup2" || before.size() < 5) continue;
    const std::string root = unescape_mount_field(before[3]);
    const std::string mount_point = unescape_mount_field(before[4]);
    std::string relative;
    if (root == "/") {
      relative = path;
    } else if (path == root || path.rfind(root + "/", 0) == 0) {
      relative = path.substr(root.size());
    } else {
      return common::unavailable("the cgroup2 mount at " + mount_point + " does not show " +
                                 "this process's cgroup " + path);
    }
    if (relative == "/") relative.clear();
    return mount_point + relative;
  }
  return common::unavailable("no cgroup2 file system is mounted (/proc/self/mountinfo)");
}

std::string own_cgroup_prefix() {
  const std::string pid = std::to_string(::getpid());
  return "hvd." + pid + "." + start_time_of(pid) + ".";
}

common::Result<std::unique_ptr<JobCgroup>> JobCgroup::create(const std::string& parent,
                                                             const std::string& name) {
  const std::string path = parent + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return common::unavailable("cannot make the cgroup " + path + ": " + errno_text(errno));
  }
  common::UniqueFd procs(::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs.valid()) {
    const int err = errno;
    ::rmdir(path.c_str());
    return common::unavailable("cannot open " + path + "/cgroup.procs: " + errno_text(err));
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(path, std::move(procs)));
}

JobCgroup::~JobCgroup() {
  procs_.reset();
  if (!kill_and_remove_cgroup(path_, kRemoveWait)) {
    spdlog::warn("cannot remove the job cgroup {}: {}", path_, errno_text(errno));
  }
}

void JobCgroup::kill() const {
  if (!write_text(path_ + "/cgroup.kill", "1")) {
    spdlog::warn("cannot kill the processes of cgroup {}: {}", path_, errno_text(errno));
  }
}

bool JobCgroup::kill_and_wait(milliseconds timeout) const {
  if (!populated()) return true;
  kill();
  return wait_empty(path_, timeout);
}

bool JobCgroup::populated() const { return is_populated(path_); }

bool kill_and_remove_cgroup(const std::string& dir, milliseconds timeout) {
  if (is_populated(dir)) {
    write_text(dir + "/cgroup.kill", "1");
    if (!wait_empty(dir, timeout)) {
      errno = EBUSY;
      return false;
    }
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

int remove_stale_cgroups(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return 0;
  std::vector<std::string> stale;
  while (dirent* entry = ::readdir(dir)) {
    // hvd.<pid>.<start>.<n>
    const std::string name = entry->d_name;
    if (name.rfind("hvd.", 0) != 0) continue;
    const size_t pid_end = name.find('.', 4);
    if (pid_end == std::string::npos) continue;
    const size_t start_end = name.find('.', pid_end + 1);
    if (start_end == std::string::npos) continue;
    const std::string pid = name.substr(4, pid_end - 4);
    const std::string start = name.substr(pid_end + 1, start_end - pid_end - 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (start_time_of(pid) == start) continue;  // its maker runs
    stale.push_back(parent + "/" + name);
  }
  ::closedir(dir);
  int removed = 0;
  for (const auto& path : stale) {
    const bool had_processes = is_populated(path);
    if (kill_and_remove_cgroup(path, kStaleWait)) {
      ++removed;
      spdlog::info("removed the cgroup {} of an hvd process that is gone{}", path,
                   had_processes ? ", and killed what still ran in it" : "");
    } else {
      spdlog::warn("cannot remove the cgroup {} of an hvd process that is gone: {}", path,
                   errno_text(errno));
    }
  }
  return removed;
}

}  // namespace hvd::daemon
