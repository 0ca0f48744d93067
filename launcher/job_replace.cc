// JobDriver's elastic replacement (docs/elastic.md): in an elastic job a
// worker that fails is started again on its own host, with its rank and
// environment, through its agent (Launch with append: same Watch stream).
// The survivors' collectives fail, hvd.elastic.run restores their last
// commit and rejoins the job in place; the replacement joins the same new
// rendezvous round and takes the state from rank 0's sync.
#include <signal.h>

#include <algorithm>

#include "common/logging.h"
#include "common/worker_env.h"
#include "daemon/rendezvous_service.h"
#include "launcher/exit_codes.h"
#include "launcher/host_agents.h"
#include "launcher/job_driver.h"

namespace hvd::launcher {

namespace {

// Starting a replacement may take a while on a loaded host.
constexpr std::chrono::milliseconds kReplaceTimeout{60'000};
// Deadline of the Signal that kills a silent worker.
constexpr std::chrono::milliseconds kSignalTimeout{5'000};

}  // namespace

void JobDriver::kill_silent(const std::vector<int>& ranks) {
  for (int rank : ranks) {
    rendezvous_->forget(rank);  // reported once; its replacement is watched after its join
    const std::string& host = plan_[static_cast<size_t>(rank)].host;
    std::fprintf(stderr,
                 "hvdrun: rank %d on host %s stopped responding: no heartbeat for %lld s; "
                 "killing it to replace it\n",
                 rank, host.c_str(), static_cast<long long>(heartbeat_timeout_.count()));
    for (size_t a = 0; a < agents_->size(); ++a) {
      const auto& owned = agents_->target(a).ranks;
      if (std::find(owned.begin(), owned.end(), rank) == owned.end()) continue;
      common::Status s = agents_->client(a).signal(job_id_, SIGKILL, kSignalTimeout, {rank});
      if (!s.is_ok()) spdlog::warn("killing rank {} on host {}: {}", rank, host, s.to_string());
    }
  }
  std::fflush(stderr);
}

bool JobDriver::elastic_finished() {
  if (!options_.elastic.enabled || succeeded_count_ == 0 || unjoined_replacements_.empty()) {
    return false;
  }
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(unjoined_replacements_, [&](int rank) {  // joined a round since: a member
    return rendezvous_->liveness().quiet_for(rank, now).has_value();
  });
  for (size_t r = 0; r < exited_.size(); ++r) {
    if (!exited_[r] && unjoined_replacements_.count(static_cast<int>(r)) == 0) return false;
  }
  return !unjoined_replacements_.empty();
}

bool JobDriver::replace(const WorkerExited& exit) {
  const ElasticOptions& elastic = options_.elastic;
  if (!elastic.enabled || terminating_) return false;
  const int code = exit.signal != 0 ? exit_code::kSignalBase + exit.signal : exit.exit_code;
  if (resets_ >= elastic.reset_limit) {
    error_line(describe_exit(exit) + "; the reset limit (" + std::to_string(elastic.reset_limit) +
               ", --reset-limit) is used up");
    finish(code);
    begin_terminate();
    return true;
  }
  size_t agent = 0;
  const hvd::v1::WorkerSpec* spec = nullptr;
  for (size_t a = 0; a < launched_requests_.size() && spec == nullptr; ++a) {
    for (const auto& worker : launched_requests_[a].workers()) {
      if (worker.rank() == exit.rank) {
        agent = a;
        spec = &worker;
        break;
      }
    }
  }
  if (spec == nullptr) return false;
  // The round forming now goes on without the dead worker; its replacement
  // joins the next one as a new worker.
  rendezvous_->lost(exit.rank);
  hvd::v1::LaunchRequest request;
  request.set_job_id(job_id_);
  request.set_append(true);
  *request.add_workers() = *spec;
  (*request.mutable_workers(0)->mutable_env())[common::env::kReplacement] = "1";
  common::Status started = agents_->client(agent).launch(request, kReplaceTimeout);
  if (!started.is_ok()) {
    error_line(describe_exit(exit) + "; cannot start a replacement: " + started.message());
    finish(code);
    begin_terminate();
    return true;
  }
  ++resets_;
  unjoined_replacements_.insert(exit.rank);
  exited_[static_cast<size_t>(exit.rank)] = false;
  --exited_count_;
  rendezvous_->forget(exit.rank);  // not watched until the replacement joins
  std::fprintf(stderr, "hvdrun: %s; started a replacement (reset %d of %d)\n",
               describe_exit(exit).c_str(), resets_, elastic.reset_limit);
  std::fflush(stderr);
  return true;
}

}  // namespace hvd::launcher
