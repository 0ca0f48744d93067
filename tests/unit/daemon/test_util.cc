#include "test_util.h"

#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace hvd::daemon::test {

bool process_gone(int64_t pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0;
}

int count_processes(const std::vector<std::string>& argv) {
  std::string wanted;
  for (const auto& a : argv) {
    wanted += a;
    wanted.push_back('\0');
  }
  int count = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline == wanted && !process_gone(std::atoll(entry->d_name))) ++count;
  }
  ::closedir(proc);
  return count;
}

}  // namespace hvd::daemon::test
