#include "launcher/output_hints.h"

namespace hvd::launcher {

std::optional<std::string> OutputHints::on_line(std::string_view line) {
  if (horovod_compat_ || horovod_hinted_) return std::nullopt;
  if (line.find("No module named 'horovod'") == std::string_view::npos &&
      line.find("No module named 'horovod.") == std::string_view::npos) {
    return std::nullopt;
  }
  horovod_hinted_ = true;
  return "the workers cannot import horovod: add --horovod-compat to run a Horovod script on "
         "hvd's Horovod API (or start it as horovodrun)";
}

}  // namespace hvd::launcher
