// Validation of Agent requests before anything is started: a malformed or
// absurd request (a job id of megabytes, a million workers, argv strings
// longer than the kernel takes, NUL bytes, bad variable names) is refused
// with INVALID_ARGUMENT naming what is wrong, never half-executed. Requests
// larger than the server's receive limit never get here (RESOURCE_EXHAUSTED
// from gRPC). Private to daemon/.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "common/job_limits.h"
#include "hvd/v1/agent.pb.h"

namespace hvd::daemon {

inline constexpr size_t kMaxJobIdBytes = 256;
// hvdrun refuses larger hosts before it builds anything (common/job_limits.h).
inline constexpr int kMaxWorkersPerLaunch = common::kMaxWorkersPerHost;
inline constexpr int kMaxArgs = 65536;          // argv entries per worker
inline constexpr int kMaxEnvEntries = 65536;    // environment variables per worker
// One argv or NAME=VALUE string (the kernel's MAX_ARG_STRLEN, less its NUL).
inline constexpr size_t kMaxArgBytes = 131071;
inline constexpr size_t kMaxCwdBytes = 4095;    // PATH_MAX - 1

// A job id: 1..kMaxJobIdBytes printable ASCII characters, no blanks (it goes
// into log lines and messages).
grpc::Status check_job_id(const std::string& job_id);

grpc::Status check_launch(const hvd::v1::LaunchRequest& req);

}  // namespace hvd::daemon
