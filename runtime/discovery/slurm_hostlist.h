// Slurm's two compact list formats, expanded:
//   host lists  "node[01-03,7],gpu5,x[1-2]-ib" -> node01 node02 node03 node7
//               gpu5 x1-ib x2-ib (zero padding kept: the width of a range's
//               first number; several bracket groups in one name multiply)
//   task counts "2(x3),1" -> 2 2 2 1 (SLURM_TASKS_PER_NODE)
// Errors name the variable the text came from, the text, and the bad token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

// At most this many entries come out of one list (a typo like [1-99999999]
// must not eat the memory).
inline constexpr size_t kMaxSlurmListEntries = 1 << 20;

common::Result<std::vector<std::string>> expand_slurm_hostlist(std::string_view list,
                                                               std::string_view variable);

common::Result<std::vector<int>> expand_slurm_tasks_per_node(std::string_view list,
                                                             std::string_view variable);

}  // namespace hvd::runtime
