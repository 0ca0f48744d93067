#include "daemon/agent/process_groups.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>

namespace hvd::daemon {

namespace {

struct ProcStat {
  char state = '?';
  pid_t pgrp = -1;
};

// Reads state and process group from /proc/PID/stat. The command name in
// parentheses may hold spaces and parentheses itself: parse after the last ')'.
bool read_stat(const char* pid, ProcStat* out) {
  const std::string path = std::string("/proc/") + pid + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');
  if (!paren) return false;
  // ") S ppid pgrp"
  char state = 0;
  long ppid = 0, pgrp = 0;
  if (std::sscanf(paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return false;
  out->state = state;
  out->pgrp = static_cast<pid_t>(pgrp);
  return true;
}

// A process whose main thread has exited also shows as a zombie while its
// other threads run on; those are listed under /proc/PID/task.
bool has_running_threads(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/task";
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return false;
  int tasks = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++tasks;
  }
  ::closedir(dir);
  return tasks > 1;
}

}  // namespace

bool group_exists(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno != ESRCH; }

std::vector<pid_t> live_groups(const std::vector<pid_t>& pgids) {
  std::vector<pid_t> existing;
  for (pid_t pgid : pgids) {
    if (group_exists(pgid)) existing.push_back(pgid);
  }
  if (existing.empty()) return existing;
  DIR* proc = ::opendir("/proc");
  if (!proc) return existing;  // without /proc, a group of zombies counts as alive
  std::set<pid_t> wanted(existing.begin(), existing.end());
  std::set<pid_t> live;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    ProcStat st;
    if (!read_stat(entry->d_name, &st) || wanted.count(st.pgrp) == 0) continue;
    if ((st.state != 'Z' && st.state != 'X') || has_running_threads(entry->d_name)) {
      live.insert(st.pgrp);
    }
  }
  ::closedir(proc);
  std::vector<pid_t> out;
  for (pid_t pgid : existing) {
    if (live.count(pgid)) out.push_back(pgid);
  }
  return out;
}

std::vector<pid_t> wait_groups_gone(std::vector<pid_t> pgids, std::chrono::milliseconds timeout) {
  constexpr auto kPoll = std::chrono::milliseconds(20);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pgids = live_groups(pgids);
    if (pgids.empty() || std::chrono::steady_clock::now() >= deadline) return pgids;
    std::this_thread::sleep_for(kPoll);
  }
}

std::vector<pid_t> signal_groups(const std::vector<pid_t>& pgids, int sig) {
  std::vector<pid_t> gone;
  for (pid_t pgid : pgids) {
    if (::kill(-pgid, sig) != 0 && errno == ESRCH) gone.push_back(pgid);
  }
  return gone;
}

}  // namespace hvd::daemon
