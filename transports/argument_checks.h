// Argument checks shared by every transport, so that all of them reject the
// same calls with the same kInvalidArgument messages, before any byte moves
// (TransportBase runs them before each collective). Counts are in bytes (see
// transport.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::transports {

Status check_allreduce(Buffer data, DataType type);
Status check_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts, int rank,
                        int size);
Status check_broadcast(Buffer data, int root, int size);
Status check_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                       std::span<const int64_t> recv_counts, int rank, int size);
Status check_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                           DataType type, int rank, int size);

// What a transport's connect() needs of its context: this rank in the
// world, a store when there are peers, a positive timeout. kInvalidArgument
// "<transport> transport: ..." otherwise.
Status check_context(std::string_view transport, const TransportContext& context);

// The sum of counts (callers check them first).
int64_t total(std::span<const int64_t> counts);

}  // namespace hvd::transports
