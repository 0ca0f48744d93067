#include "launcher/elastic_options.h"

#include <CLI/CLI.hpp>

#include "launcher/host_discovery.h"

namespace hvd::launcher {

namespace {

common::Status check_slots_per_host(const ElasticArgs& args) {
  if (args.slots_per_host >= 1) return common::Status::ok();
  return common::invalid_argument("--slots-per-host " + std::to_string(args.slots_per_host) +
                                  ": need at least 1 slot");
}

}  // namespace

void add_elastic_options(CLI::App& app, ElasticArgs& args) {
  args.min_np_opt = app.add_option("--min-np,--min-num-proc", args.min_np,
                                   "Elastic job: fewest workers (at most -np)")
                        ->type_name("N");
  args.max_np_opt =
      app.add_option("--max-np,--max-num-proc", args.max_np,
                     "Elastic job: most workers (at least -np)")
          ->type_name("N");
  args.reset_limit_opt =
      app.add_option("--reset-limit", args.reset_limit,
                     "Elastic job: most resets (failed workers or lost hosts; default 10)")
          ->type_name("N");
  app.add_option("--host-discovery-script", args.discovery_script,
                 "Elastic job: a program printing the usable hosts, one host[:slots] a line "
                 "(run every --discovery-interval)")
      ->type_name("FILE");
  args.cooldown_opt = app.add_option("--blacklist-cooldown-range", args.cooldown_range,
                                     "Elastic job: seconds a failing host is blacklisted, "
                                     "doubling from LO up to HI (default 10 300)")
                          ->type_name("LO HI")
                          ->expected(2);
  args.slots_per_host_opt =
      app.add_option("--slots-per-host,--slots", args.slots_per_host,
                     "Slots of a discovered host printed without slots (default 1)")
          ->type_name("N");
}

common::Status check_spares(int64_t spares, const ElasticOptions& elastic) {
  if (spares == 0) return common::Status::ok();
  if (!elastic.enabled) {
    return common::invalid_argument("--spares " + std::to_string(spares) +
                                    " needs an elastic job (--min-np, --max-np or "
                                    "--host-discovery-script)");
  }
  if (spares > kMaxSpares) {
    return common::invalid_argument("--spares " + std::to_string(spares) + ": at most " +
                                    std::to_string(kMaxSpares));
  }
  return common::Status::ok();
}

int default_np(const ElasticArgs& args, int slots) {
  const bool max_given = args.max_np_opt != nullptr && args.max_np_opt->count() > 0;
  return max_given && args.max_np > 0 && args.max_np < slots ? args.max_np : slots;
}

common::Result<std::vector<HostSlots>> discover_first_hosts(const ElasticArgs& args,
                                                            std::chrono::milliseconds timeout) {
  if (common::Status s = check_slots_per_host(args); !s.is_ok()) return s;
  return run_host_discovery(args.discovery_script, args.slots_per_host, timeout);
}

common::Result<ElasticOptions> resolve_elastic(const ElasticArgs& args, int np) {
  ElasticOptions out;
  const bool min_given = args.min_np_opt != nullptr && args.min_np_opt->count() > 0;
  const bool max_given = args.max_np_opt != nullptr && args.max_np_opt->count() > 0;
  const bool limit_given = args.reset_limit_opt != nullptr && args.reset_limit_opt->count() > 0;
  out.enabled = min_given || max_given || !args.discovery_script.empty();
  out.discovery_script = args.discovery_script;
  out.slots_per_host = args.slots_per_host;
  if (common::Status s = check_slots_per_host(args); !s.is_ok()) return s;
  if (args.cooldown_opt != nullptr && args.cooldown_opt->count() > 0) {
    const int lo = args.cooldown_range.at(0), hi = args.cooldown_range.at(1);
    if (lo < 1 || hi < lo) {
      return common::invalid_argument("--blacklist-cooldown-range " + std::to_string(lo) + " " +
                                      std::to_string(hi) +
                                      ": need 1 <= LO <= HI (seconds)");
    }
    if (!out.enabled) {
      return common::invalid_argument(
          "--blacklist-cooldown-range needs an elastic job (--min-np/--max-np)");
    }
    out.cooldown_low = lo;
    out.cooldown_high = hi;
  }
  out.min_np = min_given ? args.min_np : np;
  out.max_np = max_given ? args.max_np : np;
  if (limit_given) {
    if (args.reset_limit < 0) {
      return common::invalid_argument("--reset-limit " + std::to_string(args.reset_limit) +
                                      ": must be 0 or more");
    }
    if (!out.enabled) {
      return common::invalid_argument("--reset-limit needs an elastic job (--min-np/--max-np)");
    }
    out.reset_limit = args.reset_limit;
  }
  if (!out.enabled) return out;
  if (out.min_np < 1) {
    return common::invalid_argument("--min-np " + std::to_string(out.min_np) +
                                    ": need at least 1 process");
  }
  if (out.min_np > np) {
    return common::invalid_argument("--min-np " + std::to_string(out.min_np) +
                                    " is more than -np " + std::to_string(np) +
                                    " (an elastic job starts at -np workers)");
  }
  if (out.max_np < np) {
    return common::invalid_argument("--max-np " + std::to_string(out.max_np) +
                                    " is less than -np " + std::to_string(np));
  }
  return out;
}

}  // namespace hvd::launcher
