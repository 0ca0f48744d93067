#include "launcher/worker_env.h"

#include <set>

#include "common/worker_env.h"

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

Environment worker_environment(const Environment& base, const Environment& settings,
                               const std::vector<std::pair<std::string, std::string>>& extra,
                               const RankSlot& slot, const JobContext& job) {
  namespace env = common::env;
  Environment out = base;
  for (const auto& [name, value] : settings) out[name] = value;
  for (const auto& [name, value] : extra) out[name] = value;
  // Like torchrun: several workers on one host each running a full OpenMP
  // pool oversubscribe the cores (and stall the engine threads), so unless
  // the user chose a value, each worker gets one OpenMP thread.
  if (slot.local_size > 1 && out.count("OMP_NUM_THREADS") == 0) out["OMP_NUM_THREADS"] = "1";
  out[env::kRank] = std::to_string(slot.rank);
  out[env::kSize] = std::to_string(job.size);
  out[env::kLocalRank] = std::to_string(slot.local_rank);
  out[env::kLocalSize] = std::to_string(slot.local_size);
  out[env::kCrossRank] = std::to_string(slot.cross_rank);
  out[env::kCrossSize] = std::to_string(slot.cross_size);
  out[env::kRendezvousAddr] = job.rendezvous_addr;
  out[env::kJobToken] = job.job_token;
  out[env::kJobId] = job.job_id;
  out[env::kHostname] = slot.host;
  out[env::kBindAddress] = job.bind_address;
  return out;
}

std::string describe_worker_environment(
    const Environment& env, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::set<std::string> names;
  for (const auto& [name, value] : extra) names.insert(name);
  std::string out;
  for (const auto& [name, value] : env) {
    if (name.rfind("HVD_", 0) != 0 && names.count(name) == 0) continue;
    if (!out.empty()) out += ' ';
    out += name + "=" + (name == common::env::kJobToken ? std::string("***") : value);
  }
  return out;
}

}  // namespace hvd::launcher
