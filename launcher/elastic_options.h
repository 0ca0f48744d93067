// hvdrun's elastic options (docs/elastic.md). A job is elastic when
// --min-np, --max-np or --host-discovery-script is given; it starts at -np
// workers (--min-np <= -np <= --max-np) and then lives between --min-np and
// --max-np (launcher/elastic/elastic_machine.h). The timeouts and the
// discovery interval are settings (config/settings_table.cc).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/host_spec.h"

// CLI11's header costs seconds in each file that includes it; this one is
// included wherever LaunchOptions is (launcher/cli.h).
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace hvd::launcher {

struct ElasticOptions {
  bool enabled = false;
  int min_np = 0;
  int max_np = 0;
  int reset_limit = 10;  // replacements over the whole job (Horovod: no limit)
  std::string discovery_script;  // --host-discovery-script: the hosts (host_discovery.h)
  int slots_per_host = 1;        // for discovered hosts printed without slots
  int cooldown_low = 10;         // --blacklist-cooldown-range LO HI, seconds
  int cooldown_high = 300;
};

// The flags as CLI11 fills them in.
struct ElasticArgs {
  int min_np = 0;
  int max_np = 0;
  int reset_limit = 0;
  std::string discovery_script;
  int slots_per_host = 1;
  std::vector<int> cooldown_range;
  CLI::Option* min_np_opt = nullptr;
  CLI::Option* cooldown_opt = nullptr;
  CLI::Option* max_np_opt = nullptr;
  CLI::Option* reset_limit_opt = nullptr;
  CLI::Option* slots_per_host_opt = nullptr;
};

void add_elastic_options(CLI::App& app, ElasticArgs& args);

// The options for a job of `np` workers; kInvalidArgument naming the flag
// (a usage error) when they do not fit.
common::Result<ElasticOptions> resolve_elastic(const ElasticArgs& args, int np);

// --spares K (the `spares` setting): K hot spares need an elastic job, and
// at most kMaxSpares.
inline constexpr int64_t kMaxSpares = 1024;
common::Status check_spares(int64_t spares, const ElasticOptions& elastic);

// The number of workers of a job on hosts with `slots` slots in all when
// -np was not given: every slot, at most --max-np.
int default_np(const ElasticArgs& args, int slots);

// With --host-discovery-script: the job's first hosts, from one run of the
// script (host_discovery.h) within `timeout`; kInvalidArgument for a
// --slots-per-host below 1 and for a failed run.
common::Result<std::vector<HostSlots>> discover_first_hosts(const ElasticArgs& args,
                                                            std::chrono::milliseconds timeout);

}  // namespace hvd::launcher
