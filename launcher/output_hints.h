// Hints that hvdrun prints once when worker output shows a mistake it can
// name: a worker that cannot import horovod in a job without
// --horovod-compat (a copied Horovod script). Used from the job session's
// thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hvd::launcher {

class OutputHints {
 public:
  explicit OutputHints(bool horovod_compat) : horovod_compat_(horovod_compat) {}

  // The hint for this line of a worker's output, the first time only.
  std::optional<std::string> on_line(std::string_view line);

 private:
  const bool horovod_compat_;
  bool horovod_hinted_ = false;
};

}  // namespace hvd::launcher
