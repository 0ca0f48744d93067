// The Agent's request validation (daemon/agent/agent_requests.h) on
// requests parsed from the input: byte 0 even, a LaunchRequest for
// check_launch; odd, a SignalRequest (then a TerminateRequest) whose job id
// goes to check_job_id, as the Agent's handlers do before anything else.
// Checks: a refusal is INVALID_ARGUMENT with a one-line printable message;
// an accepted launch keeps every promise of the header (job id, worker
// count, distinct ranks, argv, environment names, cwd).
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "daemon/agent/agent_requests.h"
#include "fuzz_check.h"

namespace agent = hvd::daemon;
using hvd::fuzz::one_line_printable;

namespace {

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

void check_refusal(const grpc::Status& status) {
  FUZZ_CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT, status.error_message());
  FUZZ_CHECK(one_line_printable(status.error_message()), status.error_message());
}

void check_job_id_kept(const std::string& job_id) {
  FUZZ_CHECK(!job_id.empty() && job_id.size() <= agent::kMaxJobIdBytes, "job id size");
  FUZZ_CHECK(one_line_printable(job_id) && job_id.find(' ') == std::string::npos, "job id bytes");
}

void fuzz_launch(const uint8_t* data, size_t size) {
  hvd::v1::LaunchRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  auto status = agent::check_launch(req);
  if (!status.ok()) {
    check_refusal(status);
    return;
  }
  check_job_id_kept(req.job_id());
  FUZZ_CHECK(req.workers_size() >= 1 && req.workers_size() <= agent::kMaxWorkersPerLaunch, "workers");
  std::set<int> ranks;
  for (const auto& w : req.workers()) {
    FUZZ_CHECK(w.rank() >= 0 && ranks.insert(w.rank()).second, "rank " + std::to_string(w.rank()));
    FUZZ_CHECK(w.argv_size() >= 1 && !w.argv(0).empty(), "empty command");
    for (const auto& arg : w.argv()) {
      FUZZ_CHECK(arg.size() <= agent::kMaxArgBytes && !has_nul(arg), "argument");
    }
    for (const auto& [name, value] : w.env()) {
      FUZZ_CHECK(!name.empty() && name.find('=') == std::string::npos && !has_nul(name), "env name");
      FUZZ_CHECK(!has_nul(value) && name.size() + 1 + value.size() <= agent::kMaxArgBytes, "env value");
    }
    FUZZ_CHECK(w.cwd().size() <= agent::kMaxCwdBytes && !has_nul(w.cwd()), "cwd");
  }
}

void fuzz_job_id(const std::string& job_id) {
  auto status = agent::check_job_id(job_id);
  if (status.ok()) {
    check_job_id_kept(job_id);
  } else {
    check_refusal(status);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // "invalid UTF-8" on every other input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    fuzz_launch(data + 1, size - 1);
    return 0;
  }
  hvd::v1::SignalRequest signal;
  if (signal.ParseFromArray(data + 1, static_cast<int>(size - 1))) fuzz_job_id(signal.job_id());
  hvd::v1::TerminateRequest terminate;
  if (terminate.ParseFromArray(data + 1, static_cast<int>(size - 1))) fuzz_job_id(terminate.job_id());
  return 0;
}
