// --host-discovery-script (docs/elastic.md): the hosts an elastic job may
// use, printed by a user's script, one `host` or `host:slots` per line
// (`--slots-per-host` for lines without slots; blank lines and `#` comments
// skipped). The script runs with hvdrun's environment and must finish
// within the deadline; its output is checked line by line, an error names
// the script and the bad line. Today it is run once, at start, for the
// job's hosts; polling it while the job runs is still being built.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

// How long one run of the script may take.
inline constexpr std::chrono::seconds kDiscoveryTimeout{10};

// The script's stdout, parsed. kInvalidArgument: "--host-discovery-script
// S: line 3 'h2:x': <why>", "... printed no hosts", a host listed twice.
common::Result<std::vector<HostSlots>> parse_discovery_output(std::string_view text,
                                                              int default_slots,
                                                              std::string_view script);

// Runs `script` (a path, executed directly) and parses what it prints.
// kInvalidArgument as above, or for a script that cannot run, exits with a
// non-zero code (its last stderr line quoted) or misses the deadline.
common::Result<std::vector<HostSlots>> run_host_discovery(const std::string& script,
                                                          int default_slots,
                                                          std::chrono::milliseconds timeout);

}  // namespace hvd::launcher
