// What to start: the argv, the complete environment and the working directory
// of one child process (common/child_process.h starts it; the agent's
// Supervisor and the launcher's discovery and ssh children use it).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hvd::common {

struct ProcessSpec {
  int rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the complete environment
  std::string cwd;                         // empty: inherit
};

}  // namespace hvd::common
