// Reads hvd_op structs as a caller of the C ABI laid them out (c_api.h,
// "Versioning"): struct_size says how many bytes the caller's struct has.
// Older, shorter structs get the defaults of the fields they lack; newer,
// longer ones are accepted only when every byte past this libhvd's struct is
// zero. Every refusal is one kInvalidArgument line.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "hvd/c_api.h"

namespace hvd::runtime {

// `op` as this libhvd's hvd_op; `call` names the C function in errors.
common::Result<hvd_op> read_op(const hvd_op* op, const char* call);

// n ops strided by ops[0].struct_size (each op must have that size).
common::Result<std::vector<hvd_op>> read_ops(const hvd_op* ops, int32_t n, const char* call);

}  // namespace hvd::runtime
