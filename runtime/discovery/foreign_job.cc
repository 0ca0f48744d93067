#include "runtime/discovery/foreign_job.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/host_lookup.h"
#include "common/logging.h"
#include "common/worker_env_names.h"
#include "runtime/discovery/launcher_env.h"
#include "runtime/discovery/local_address.h"

namespace hvd::runtime {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kPollInterval{20};
constexpr milliseconds kProbeTimeout{2000};
constexpr milliseconds kFinishCallTimeout{5000};

// The seconds of a duration, for messages.
long long seconds_of(milliseconds d) {
  return static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

std::string host_and_origin(const WorldInfo& world) {
  std::string text = "'" + world.rendezvous_host + "'";
  if (!world.rendezvous_origin.empty()) text += " (" + world.rendezvous_origin + ")";
  return text;
}

// The rendezvous host must resolve on every rank (rank 0 reaches its own
// service through it, too).
common::Status check_resolves(const WorldInfo& world) {
  auto problem = common::resolve_problem(world.rendezvous_host);
  if (!problem) return common::Status::ok();
  const std::string which = host_and_origin(world) + ", which does not resolve on this host (" +
                            *problem + "): set " + kRendezvousHostVar;
  if (world.rank == 0) {
    return common::unavailable(
        "this rank (rank 0) hosts the job's rendezvous, and every rank reaches it at " + which +
        " to an address of this host that every rank can reach, the same for every rank");
  }
  return common::unavailable("rank 0 hosts the job's rendezvous at " + which +
                             " to the address of rank 0's host, the same for every rank");
}

}  // namespace

ForeignJob::ForeignJob(const WorldInfo& world, std::unique_ptr<RendezvousHost> host)
    : launcher_(world.launcher),
      address_(world.rendezvous_addr),
      host_origin_(host_and_origin(world)),
      token_(world.job_token),
      host_(std::move(host)) {}

ForeignJob::~ForeignJob() = default;

common::Result<std::unique_ptr<ForeignJob>> ForeignJob::start(const WorldInfo& world) {
  HVD_RETURN_IF_ERROR(check_resolves(world));
  std::unique_ptr<RendezvousHost> host;
  if (world.rank == 0) {
    const bool loopback =
        world.local_size == world.size && is_loopback_host(world.rendezvous_host);
    const bool v6 = world.rendezvous_host.find(':') != std::string::npos;  // an IPv6 literal
    const char* bind = loopback ? (v6 ? "::1" : "127.0.0.1") : (v6 ? "::" : "0.0.0.0");
    auto started = RendezvousHost::start(bind, world.rendezvous_port, world.job_token, world.size);
    if (!started.is_ok()) return started.status();
    host = std::move(started).value();
    static std::atomic<bool> told{false};
    if (world.token_derived && !told.exchange(true)) {
      spdlog::info("started by {}: this rank hosts the job's rendezvous at {} with a token derived "
                   "from the launcher's job identifiers, which is no secret; set {} (the same "
                   "secret for every rank) to make the rendezvous authenticated",
                   world.launcher, world.rendezvous_addr, common::env::kJobToken);
    }
  }
  return std::unique_ptr<ForeignJob>(new ForeignJob(world, std::move(host)));
}

common::Result<milliseconds> ForeignJob::reach(RendezvousClient& client,
                                               milliseconds timeout) const {
  const auto begin = Clock::now();
  if (!client.wait_connected(timeout)) {
    const std::string within = " within " + std::to_string(seconds_of(timeout)) +
                               " s (HVD_START_TIMEOUT)";
    if (host_) {
      return common::timeout_error(
          "this rank (rank 0) hosts the job's rendezvous but could not reach it at " + address_ +
          within + ": is " + host_origin_ + " an address of this host? Set " +
          kRendezvousHostVar + " to one that every rank can reach, the same for every rank");
    }
    return common::timeout_error(
        "the job's rendezvous at " + address_ + " did not answer" + within + ": rank 0 hosts it "
        "when " + launcher_ + " starts the job, at " + host_origin_ + "; did rank 0 start and "
        "call hvd.init(), and can this host reach " + address_ + "?");
  }
  auto left = timeout - std::chrono::duration_cast<milliseconds>(Clock::now() - begin);
  return std::max(left, milliseconds(1000));
}

void ForeignJob::finish(bool joined, bool started) {
  if (host_) {
    if (joined) host_->finish(kFinishWait);
    host_->close();
    return;
  }
  if (!joined) return;
  // A client of its own, so that no call outwaits a rank 0 that is gone.
  RendezvousClient client(address_, token_, kFinishCallTimeout, kReconnectBackoff);
  auto added = client.add(kFinishedKey, 1);
  if (!added.is_ok()) {
    spdlog::debug("could not tell rank 0 that this rank is finished: {}", added.status().to_string());
    return;
  }
  if (!started) return;
  const auto deadline = Clock::now() + kFinishWait;
  while (Clock::now() < deadline) {
    // Gone (an error) or replaced by rank 0's next service (no such key): done.
    auto present = client.check_now({kFinishedKey}, kProbeTimeout);
    if (!present.is_ok() || !present.value()) return;
    std::this_thread::sleep_for(kPollInterval);
  }
  spdlog::warn("the job's rendezvous at {} was still up {} s after this rank shut down", address_,
               seconds_of(kFinishWait));
}

}  // namespace hvd::runtime
