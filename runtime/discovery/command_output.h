// A short helper command's standard output, for start-up discovery (Slurm's
// scontrol). The command runs with this process's environment, stdin and
// stderr on /dev/null, and is killed when it outlives its time.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

// At most this much of the output is kept; the rest is read and dropped.
inline constexpr size_t kMaxCommandOutput = 1 << 16;

// The output of `argv` (argv[0] looked up on PATH). kNotFound when it cannot
// be started, kTimeout when it is still running after `timeout` (it is then
// killed), kUnavailable when it exits non-zero or dies of a signal; each
// message names the command.
common::Result<std::string> command_output(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout);

}  // namespace hvd::runtime
