// An hvd_op from the C ABI turned into an engine Entry, with every argument
// checked at enqueue (so that errors surface at once, on the calling rank):
// codes, shapes, pointers, roots, splits, scale factors. Fields an op type
// does not use are normalised (e.g. a broadcast's reduce op), so that stray
// values never cause a mismatch across ranks. Failures are kInvalidArgument
// naming the op and the bad value.
#pragma once

#include "common/status.h"
#include "hvd/c_api.h"
#include "runtime/engine/process_sets.h"
#include "runtime/engine/tensor_queue.h"

namespace hvd::runtime {

// `set` is the op's process set (this rank a member). The entry's name is
// left empty when the op has none (the set's queue names it when it admits
// it); handle and enqueue time are the caller's.
common::Result<engine::Entry> make_entry(const hvd_op& op, const engine::ProcessSet& set);

// An op of `type` on the global set, CPU, every other field zero: what the
// runtime's own calls (the blocking API, process-set agreement) start from.
hvd_op blank_op(int32_t type);

}  // namespace hvd::runtime
