// The size of a job against common/job_limits.h, checked while hvdrun parses
// its command line, before anything is built per rank: -np and --max-np at
// most kMaxWorldSize, and no host given more ranks than one agent starts
// (kMaxWorkersPerHost; a host's slot count is checked when it is parsed,
// launcher/host_spec.h, so this catches the implied localhost:NP).
#pragma once

#include <vector>

#include "common/status.h"
#include "launcher/elastic_options.h"
#include "launcher/host_spec.h"

namespace hvd::launcher {

// kInvalidArgument, one line naming the flag, the value and the limit.
// `np_given`: -np was on the command line (else np is every slot).
common::Status check_job_size(const std::vector<HostSlots>& hosts, int np, bool np_given,
                              const ElasticOptions& elastic);

}  // namespace hvd::launcher
