// --host-discovery-script (docs/elastic.md): the hosts an elastic job may
// use, printed by a user's script, one `host` or `host:slots` per line
// (`--slots-per-host` for lines without slots; blank lines and `#` comments
// skipped). The script runs with hvdrun's environment and must finish
// within the deadline; its output is checked line by line, an error names
// the script and the bad line. It runs once at start, for the job's first
// hosts, then while the job runs every --discovery-interval
// (launcher/elastic/discovery_poller.h), when printing no host is allowed.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

// The script's stdout, parsed. kInvalidArgument: "--host-discovery-script
// S: line 3 'h2:x': <why>", a host listed twice, and, when `need_hosts`,
// "... printed no hosts".
common::Result<std::vector<HostSlots>> parse_discovery_output(std::string_view text,
                                                              int default_slots,
                                                              std::string_view script,
                                                              bool need_hosts = true);

// Runs `script` (a path, executed directly) and parses what it prints.
// kInvalidArgument as above, or for a script that cannot run, exits with a
// non-zero code (its last stderr line quoted) or misses the deadline.
common::Result<std::vector<HostSlots>> run_host_discovery(const std::string& script,
                                                          int default_slots,
                                                          std::chrono::milliseconds timeout,
                                                          bool need_hosts = true);

}  // namespace hvd::launcher
