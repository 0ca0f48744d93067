// `hvdrun --horovod-compat`: the folder holding the opt-in `horovod` package
// (python/compat: `import horovod.torch` runs hvd.torch). It is put first on
// the workers' PYTHONPATH only when asked for, so a real Horovod installation
// is never shadowed by default.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd::launcher {

// Next to the running hvdrun: <prefix>/share/hvd/python-compat when
// installed, <build>/python/compat in a build tree. kNotFound naming the
// places looked at.
common::Result<std::string> find_horovod_shim();

// PYTHONPATH with `dir` first (`current` may be null or empty).
std::string prepend_python_path(const std::string& dir, const char* current);

}  // namespace hvd::launcher
