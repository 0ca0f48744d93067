// What a job's policy may add to the session (launcher/job_session.h)
// beyond JobPolicy, the part every policy has: processes of its own (hot
// spares), hosts it learns of (the discovery script) or blacklists, workers
// whose slot is not their launch rank, a rendezvous configured before it
// serves, threads to stop. An elastic job's policy registers one with the
// session (JobSession::extend, from its constructor), as Horovod's elastic
// driver is a handler injected into its one driver; a static job registers
// none, and the session then uses these defaults. The session calls it on
// its own thread.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "launcher/job_events.h"
#include "launcher/worker_environment.h"

namespace hvd::daemon {
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

class JobExtension {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~JobExtension() = default;

  // The rendezvous service, before it serves.
  virtual void configure(daemon::RendezvousService& /*rendezvous*/) {}
  // What every worker's environment adds to the common one.
  virtual void add_env(Environment& /*env*/) const {}
  // Every agent launched its ranks; per agent, where its workers bind.
  virtual void launched(const std::vector<std::string>& /*bind_addresses*/) {}
  // Process `exit.rank` exited. True when it was the extension's own (a
  // hot spare), not a slot's worker; a promoted spare's exit becomes its
  // slot's worker's (exit.rank is rewritten).
  virtual bool take_spare_exit(WorkerExited& /*exit*/) { return false; }
  // Whether process `process` is its slot's worker still (false: a
  // promoted spare took its slot).
  virtual bool holds_slot(int /*process*/) const { return true; }
  // A run of the host discovery script, while the job is not terminating.
  virtual void hosts_discovered(const HostsDiscovered& /*found*/) {}
  // The host of process `process`; empty when the extension does not know
  // (the session then looks in the plan).
  virtual std::string host_of(int /*process*/) const { return {}; }
  virtual bool is_spare(int /*process*/) const { return false; }
  // Hosts blacklisted at `now` and how long their cooldown lasts still
  // (for hvdrun's /metrics).
  virtual std::vector<std::pair<std::string, Clock::duration>> blacklisted(
      Clock::time_point /*now*/) const {
    return {};
  }
  // The rank whose output `process` writes.
  virtual int output_rank(int process) const { return process; }
  // The session shuts down: threads of the extension end.
  virtual void stop() {}
};

}  // namespace hvd::launcher
