// The numeric constants of the C ABI (hvd/c_api.h) by name, for
// hvd_constant(): the HVD_* macros and hvd_op's layout ("hvd_op.size",
// "hvd_op.offset.<field>"). The .cc checks at compile time that each macro
// shared with C++ equals its C++ counterpart (DataType, ReduceOp,
// StatusCode, engine::OpType, MembershipWatch's bits, the plugin ABI's
// devices), so the two can never drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hvd::runtime {

// The constant called `name`, or nothing when there is none.
std::optional<int64_t> find_constant(std::string_view name);

}  // namespace hvd::runtime
