// Hints that hvdrun prints once when worker output shows a mistake it can
// name: a worker that cannot import horovod in a job without
// --horovod-compat (a copied Horovod script), or one whose Python has no
// torch or numpy (another python3 first on PATH, a venv without them). Used
// from the job session's thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace hvd::launcher {

class OutputHints {
 public:
  // `command`: the workers' program as given (its first word, "python3" or
  // "/opt/venv/bin/python"), named in the torch and numpy hint.
  explicit OutputHints(bool horovod_compat, std::string command = "")
      : horovod_compat_(horovod_compat), command_(std::move(command)) {}

  // The hint for this line of a worker's output, the first time only.
  std::optional<std::string> on_line(std::string_view line);

 private:
  std::optional<std::string> horovod_hint(std::string_view line);
  std::optional<std::string> framework_hint(std::string_view line);

  const bool horovod_compat_;
  const std::string command_;
  bool horovod_hinted_ = false;
  bool framework_hinted_ = false;
};

// Where `command` is found: itself when it has a '/', else the first
// executable of that name in `path` (a PATH value), else "".
std::string find_in_path(const std::string& command, std::string_view path);

}  // namespace hvd::launcher
