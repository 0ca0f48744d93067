#include "launcher/horovod_shim.h"

#include <filesystem>
#include <system_error>

namespace hvd::launcher {

common::Result<std::string> find_horovod_shim() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return common::not_found("--horovod-compat: cannot locate hvdrun itself: " + ec.message());
  const fs::path bin = exe.parent_path();
  const fs::path candidates[] = {bin / ".." / "share" / "hvd" / "python-compat",
                                 bin / ".." / "python" / "compat"};
  std::string tried;
  for (const auto& dir : candidates) {
    if (fs::is_directory(dir / "horovod", ec)) return fs::weakly_canonical(dir, ec).string();
    tried += (tried.empty() ? "" : ", ") + dir.lexically_normal().string();
  }
  return common::not_found("--horovod-compat: the horovod shim is not installed next to hvdrun "
                           "(looked in " + tried + ")");
}

std::string prepend_python_path(const std::string& dir, const char* current) {
  if (current == nullptr || *current == '\0') return dir;
  return dir + ":" + current;
}

}  // namespace hvd::launcher
