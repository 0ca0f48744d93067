// The consistency check of one tensor's requests across the ranks of a
// process set: op type, dtype, reduce op, root, device, scale factors, group
// and shape must agree (allgather and alltoall: all but the first dimension).
// The error names the field and which ranks gave which value, e.g.
//   mismatched shape for tensor 'w': rank 0 [4, 2], rank 1 [4, 3]
#pragma once

#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

// `requests`: every request announced for one name, each with .rank its set
// rank; `global_ranks[set rank]` is the rank messages name. kInvalidArgument
// on the first field that differs.
common::Status check_agreement(std::span<const Request* const> requests,
                               std::span<const int> global_ranks);

// Formats a shape as "[4, 2]".
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime::engine
