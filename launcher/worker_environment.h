// The complete environment of one worker: hvdrun's own environment, then the
// resolved settings (HVD_* tunables), then -x variables, then the contract of
// common/worker_env_names.h (rank, sizes, rendezvous address, the worker's
// rendezvous credential in HVD_JOB_TOKEN, ...) and
// the variables horovodrun (Gloo mode) gives its workers (HOROVOD_RANK, ...,
// HOROVOD_CONTROLLER=gloo; docs/environment.md), each layer overriding the
// one before. The HOROVOD_* names are for user code that reads them; the
// runtime never does.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launcher/slot_plan.h"

namespace hvd::launcher {

using Environment = std::map<std::string, std::string>;

struct JobContext {
  std::string job_id;
  std::string job_token;        // secret: never print it
  std::string rendezvous_addr;  // host:port
  std::string bind_address;     // HVD_BIND_ADDRESS
  int size = 0;
  // --network-interface, in the user's order (empty: not given).
  std::vector<std::string> network_interfaces;
};

// The environment of this process (environ).
Environment current_environment();

Environment worker_environment(const Environment& base, const Environment& settings,
                               const std::vector<std::pair<std::string, std::string>>& extra,
                               const RankSlot& slot, const JobContext& job);

// "HVD_JOB_TOKEN=*** HVD_RANK=0 ..." for the variables hvdrun sets (the
// HVD_* and HOROVOD_* ones and the -x names), secrets masked: safe to print.
std::string describe_worker_environment(
    const Environment& env, const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace hvd::launcher
