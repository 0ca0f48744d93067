#include "launcher/worker_environment.h"

#include <set>
#include <string>
#include <vector>

#include "common/worker_env_names.h"
#include "config/settings_table.h"
#include "daemon/rendezvous/worker_credentials.h"

extern char** environ;  // NOLINT: POSIX

namespace hvd::launcher {

Environment current_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

namespace {

// The names horovodrun's Gloo mode gives the same figures (gloo_run.py,
// create_slot_env_vars). Only the launcher knows them: the runtime reads the
// HVD_* contract and never these.
struct Place {
  const char* hvd;
  const char* horovod;
  std::string value;
};

std::vector<Place> places(const RankSlot& slot, const JobContext& job) {
  namespace env = common::env;
  return {{env::kRank, "HOROVOD_RANK", std::to_string(slot.rank)},
          {env::kSize, "HOROVOD_SIZE", std::to_string(job.size)},
          {env::kLocalRank, "HOROVOD_LOCAL_RANK", std::to_string(slot.local_rank)},
          {env::kLocalSize, "HOROVOD_LOCAL_SIZE", std::to_string(slot.local_size)},
          {env::kCrossRank, "HOROVOD_CROSS_RANK", std::to_string(slot.cross_rank)},
          {env::kCrossSize, "HOROVOD_CROSS_SIZE", std::to_string(slot.cross_size)},
          {env::kHostname, "HOROVOD_HOSTNAME", slot.host}};
}

std::string join(const std::vector<std::string>& items, char separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// What else horovodrun's Gloo mode sets (gloo_run.py, create_run_env_vars),
// overriding the user's values as it does. Not HOROVOD_GLOO_RENDEZVOUS_ADDR
// and _PORT: hvd's rendezvous is a gRPC service with a job token, not
// Horovod's HTTP one, and nothing should try to speak HTTP to it.
void add_horovod_run_variables(Environment& out, const JobContext& job) {
  out["HOROVOD_CONTROLLER"] = "gloo";
  out["HOROVOD_CPU_OPERATIONS"] = "gloo";
  if (!job.network_interfaces.empty()) {
    out["HOROVOD_GLOO_IFACE"] = job.network_interfaces.front();  // horovodrun: the first
    out["NCCL_SOCKET_IFNAME"] = join(job.network_interfaces, ',');
  }
}

// A -x HOROVOD_* alias of a setting (-x HOROVOD_HIERARCHICAL_ALLREDUCE=1)
// stands for its HVD_* name too, unless -x names that as well: hvdrun hands
// every setting to the workers as HVD_*, which the runtime reads before the
// alias, so hvdrun's own value would otherwise hide the user's.
void add_alias_settings(Environment& out,
                        const std::vector<std::pair<std::string, std::string>>& extra) {
  for (const auto& spec : config::all_settings()) {
    if (spec.horovod_env.empty()) continue;
    const std::string* alias = nullptr;
    bool named = false;
    for (const auto& [name, value] : extra) {
      if (name == spec.horovod_env) alias = &value;  // the last -x wins
      named = named || name == spec.env;
    }
    if (alias != nullptr && !named) out[std::string(spec.env)] = *alias;
  }
}

}  // namespace

Environment worker_environment(const Environment& base, const Environment& settings,
                               const std::vector<std::pair<std::string, std::string>>& extra,
                               const RankSlot& slot, const JobContext& job) {
  namespace env = common::env;
  Environment out = base;
  for (const auto& [name, value] : settings) out[name] = value;
  for (const auto& [name, value] : extra) out[name] = value;
  add_alias_settings(out, extra);
  // Like torchrun: several workers on one host each running a full OpenMP
  // pool oversubscribe the cores (and stall the engine threads), so unless
  // the user chose a value, each worker gets one OpenMP thread.
  if (slot.local_size > 1 && out.count("OMP_NUM_THREADS") == 0) out["OMP_NUM_THREADS"] = "1";
  // Like horovodrun: Python workers write through the agent's pipes, which
  // would otherwise hold their output back until a buffer fills.
  if (out.count("PYTHONUNBUFFERED") == 0) out["PYTHONUNBUFFERED"] = "1";
  for (const Place& place : places(slot, job)) {
    out[place.hvd] = place.value;
    out[place.horovod] = place.value;
  }
  out[env::kRendezvousAddr] = job.rendezvous_addr;
  // Not the job's token: the worker's own credential (its slot's, or its
  // spare id's), which lets it write only its own keys and heartbeat only
  // for itself (daemon/rendezvous/worker_rights.h).
  out[env::kJobToken] = daemon::worker_credential(job.job_token, slot.rank);
  out[env::kJobId] = job.job_id;
  out[env::kBindAddress] = job.bind_address;
  add_horovod_run_variables(out, job);
  return out;
}

std::string describe_worker_environment(
    const Environment& env, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::set<std::string> names;
  for (const auto& [name, value] : extra) names.insert(name);
  std::string out;
  for (const auto& [name, value] : env) {
    bool ours = name.rfind("HVD_", 0) == 0 || name.rfind("HOROVOD_", 0) == 0;
    if (!ours && names.count(name) == 0) continue;
    if (!out.empty()) out += ' ';
    out += name + "=" + (name == common::env::kJobToken ? std::string("***") : value);
  }
  return out;
}

}  // namespace hvd::launcher
