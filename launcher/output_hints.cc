#include "launcher/output_hints.h"

#include <unistd.h>

#include <cstdlib>

namespace hvd::launcher {

namespace {

// The Python whose Debian packages (python3-torch, python3-numpy) hvd's
// documentation and tests use.
constexpr char kDebianPython[] = "/usr/bin/python3";

bool is_python(std::string_view command) {
  if (auto slash = command.rfind('/'); slash != std::string_view::npos) {
    command.remove_prefix(slash + 1);
  }
  return command.rfind("python", 0) == 0;
}

}  // namespace

std::string find_in_path(const std::string& command, std::string_view path) {
  if (command.empty() || command.find('/') != std::string::npos) return command;
  while (true) {
    const size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + command;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return "";
    path.remove_prefix(colon + 1);
  }
}

std::optional<std::string> OutputHints::on_line(std::string_view line) {
  if (auto hint = horovod_hint(line)) return hint;
  return framework_hint(line);
}

std::optional<std::string> OutputHints::horovod_hint(std::string_view line) {
  if (horovod_compat_ || horovod_hinted_) return std::nullopt;
  if (line.find("No module named 'horovod'") == std::string_view::npos &&
      line.find("No module named 'horovod.") == std::string_view::npos) {
    return std::nullopt;
  }
  horovod_hinted_ = true;
  return "the workers cannot import horovod: add --horovod-compat to run a Horovod script on "
         "hvd's Horovod API (or start it as horovodrun)";
}

std::optional<std::string> OutputHints::framework_hint(std::string_view line) {
  if (framework_hinted_) return std::nullopt;
  std::string module;
  for (const char* name : {"torch", "numpy"}) {
    if (line.find(std::string("No module named '") + name + "'") != std::string_view::npos) {
      module = name;
      break;
    }
  }
  if (module.empty()) return std::nullopt;
  framework_hinted_ = true;
  if (!is_python(command_)) {
    return "the workers' Python cannot import " + module + ": start the job with a Python that "
           "has torch and numpy, e.g. " + kDebianPython + " (Debian's python3-torch)";
  }
  const char* path = std::getenv("PATH");
  const std::string found = find_in_path(command_, path == nullptr ? "" : path);
  const std::string ran =
      found.empty() || found == command_ ? command_ : command_ + " (" + found + " here)";
  if (found == kDebianPython) {
    return "the workers ran " + ran + ", which cannot import " + module +
           ": install Debian's python3-torch and python3-numpy (bash deploy/install-deps.sh)";
  }
  return "the workers ran " + ran + ", which cannot import " + module +
         ": give hvdrun a Python that has torch and numpy, e.g. " + kDebianPython +
         " (Debian's python3-torch)";
}

}  // namespace hvd::launcher
