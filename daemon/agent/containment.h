// How an agent (hvd-agent, or the one embedded in hvdrun) keeps every
// process of a job together, so that none outlives the job whatever it does
// (setsid, double fork, daemonize, ignore SIGTERM) and however the job ends
// (docs/agent.md, "Containment"):
//
// - cgroup: a cgroup v2 per job (job_cgroup.h), where this process may make
//   one beside its own; ended with cgroup.kill by the Supervisor, by the
//   group reaper when the agent is killed, or by the next agent on the host.
// - subreaper: where it may not, each worker runs under a keeper, a child
//   subreaper (common/child_keeper.h) that adopts the worker's orphans and
//   kills them when the worker exits or the agent dies.
//
// The choice is made once per process: `auto` (the default) takes cgroup
// when a probe can make a cgroup and move a process into it, else
// subreaper; `cgroup` requires it; `subreaper` never tries it.
// HVD_CONTAINMENT sets it for hvdrun; hvd-agent has --containment.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "daemon/agent/job_cgroup.h"

namespace hvd::daemon {

enum class ContainmentMode { kAuto, kCgroup, kSubreaper };

inline constexpr char kContainmentEnv[] = "HVD_CONTAINMENT";

// "auto", "cgroup" or "subreaper"; kInvalidArgument naming `text` otherwise.
common::Result<ContainmentMode> parse_containment_mode(std::string_view text);

struct Containment {
  bool cgroup = false;
  std::string cgroup_parent;  // cgroup: where job cgroups are made (the agent's own cgroup)
  std::string reason;         // subreaper: why not cgroup
  // "cgroup (a cgroup v2 per job in /sys/fs/cgroup/...)", "subreaper (...)".
  std::string describe() const;
};

// Probes what this process may use (once a cgroup is found usable, removes
// the cgroups left by gone hvd processes there). `source` names the setting
// in messages, followed by the mode ("--containment ", "HVD_CONTAINMENT=").
// kFailedPrecondition for kCgroup when no cgroup can be used, saying why.
common::Result<Containment> detect_containment(ContainmentMode mode, std::string_view source);

// detect_containment(), which then becomes this process's containment.
common::Result<Containment> configure_containment(ContainmentMode mode, std::string_view source);
// The same, from $HVD_CONTAINMENT (auto when unset); an invalid value is
// kInvalidArgument. Done at most once: a later call returns the first result.
common::Result<Containment> configure_containment_from_environment();
// This process's containment: the configured one; else from the environment
// (auto, with a warning, when that fails).
Containment current_containment();
// Replaces it (tests).
void set_current_containment(Containment containment);

// A new job's cgroup under `containment` (a Supervisor's); null for
// subreaper, or with a warning when none can be made (the job's workers then
// run under keepers).
std::unique_ptr<JobCgroup> make_job_cgroup(const Containment& containment);

}  // namespace hvd::daemon
