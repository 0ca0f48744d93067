#include "daemon/agent/agent_requests.h"

#include <set>

#include "common/printable.h"

namespace hvd::daemon {

namespace {

grpc::Status invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

grpc::Status check_worker(const hvd::v1::WorkerSpec& worker) {
  const std::string who = rank_text(worker.rank());
  if (worker.rank() < 0) return invalid("negative " + who);
  if (worker.argv().empty()) return invalid(who + " has an empty command line");
  if (worker.argv(0).empty()) return invalid(who + " has an empty command name");
  if (worker.argv_size() > kMaxArgs) {
    return invalid(who + " has " + std::to_string(worker.argv_size()) +
                   " command-line arguments; at most " + std::to_string(kMaxArgs) +
                   " are allowed");
  }
  for (int i = 0; i < worker.argv_size(); ++i) {
    const std::string& arg = worker.argv(i);
    if (arg.size() > kMaxArgBytes) {
      return invalid(who + ": argument " + std::to_string(i) + " is longer than " +
                     std::to_string(kMaxArgBytes) + " bytes");
    }
    if (has_nul(arg)) {
      return invalid(who + ": argument " + std::to_string(i) + " contains a NUL byte");
    }
  }
  if (worker.env_size() > kMaxEnvEntries) {
    return invalid(who + " has " + std::to_string(worker.env_size()) +
                   " environment variables; at most " + std::to_string(kMaxEnvEntries) +
                   " are allowed");
  }
  for (const auto& [name, value] : worker.env()) {
    // Names are echoed in messages: only when they are short and plain, and
    // escaped (common/printable.h), as hvdrun prints the message.
    const bool plain = name.size() <= 256 && !has_nul(name);
    if (name.empty() || name.find('=') != std::string::npos || !plain) {
      return invalid(who + ": invalid environment variable name" +
                     (plain ? " '" + common::printable(name) + "'" : std::string()));
    }
    if (name.size() + 1 + value.size() > kMaxArgBytes) {
      return invalid(who + ": environment variable " + common::printable(name) +
                     " is longer than " + std::to_string(kMaxArgBytes) + " bytes");
    }
    if (has_nul(value)) {
      return invalid(who + ": environment variable " + common::printable(name) +
                     " contains a NUL byte");
    }
  }
  if (worker.cwd().size() > kMaxCwdBytes || has_nul(worker.cwd())) {
    return invalid(who + ": invalid working directory");
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status check_job_id(const std::string& job_id) {
  if (job_id.empty()) return invalid("empty job id");
  if (job_id.size() > kMaxJobIdBytes) {
    return invalid("job id longer than " + std::to_string(kMaxJobIdBytes) + " bytes");
  }
  for (char c : job_id) {
    if (c < 0x21 || c > 0x7e) {
      return invalid("job id with a character other than printable ASCII");
    }
  }
  return grpc::Status::OK;
}

grpc::Status check_launch(const hvd::v1::LaunchRequest& req) {
  if (auto s = check_job_id(req.job_id()); !s.ok()) return s;
  if (req.workers().empty()) return invalid("job '" + req.job_id() + "' has no workers");
  if (req.workers_size() > kMaxWorkersPerLaunch) {
    return invalid("job '" + req.job_id() + "' has " + std::to_string(req.workers_size()) +
                   " workers; one agent starts at most " + std::to_string(kMaxWorkersPerLaunch));
  }
  std::set<int> ranks;
  for (const auto& worker : req.workers()) {
    if (!ranks.insert(worker.rank()).second) {
      return invalid(rank_text(worker.rank()) + " appears twice in job '" + req.job_id() + "'");
    }
    if (auto s = check_worker(worker); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

}  // namespace hvd::daemon
