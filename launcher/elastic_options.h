// hvdrun's elastic options (docs/elastic.md). A job is elastic when
// --min-np or --max-np is given. What works today: a worker that fails is
// replaced on its own host (the survivors recover in place through
// hvd.elastic.run), at most --reset-limit times. Host discovery, shrinking
// below -np and growing above it are still being built: --min-np and
// --max-np must bracket -np, and the job is kept at -np.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace hvd::launcher {

struct ElasticOptions {
  bool enabled = false;
  int min_np = 0;
  int max_np = 0;
  int reset_limit = 10;  // replacements over the whole job (Horovod: no limit)
  std::string discovery_script;  // --host-discovery-script: the hosts (launcher/host_discovery.h)
  int slots_per_host = 1;        // for discovered hosts printed without slots
};

// The flags as CLI11 fills them in.
struct ElasticArgs {
  int min_np = 0;
  int max_np = 0;
  int reset_limit = 0;
  std::string discovery_script;
  int slots_per_host = 1;
  CLI::Option* min_np_opt = nullptr;
  CLI::Option* max_np_opt = nullptr;
  CLI::Option* reset_limit_opt = nullptr;
  CLI::Option* slots_per_host_opt = nullptr;
};

void add_elastic_options(CLI::App& app, ElasticArgs& args);

// The options for a job of `np` workers; kInvalidArgument naming the flag
// (a usage error) when they do not fit.
common::Result<ElasticOptions> resolve_elastic(const ElasticArgs& args, int np);

// The number of workers of a job on hosts with `slots` slots in all when
// -np was not given: every slot, at most --max-np.
int default_np(const ElasticArgs& args, int slots);

}  // namespace hvd::launcher
