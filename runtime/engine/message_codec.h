// The bytes of one negotiation cycle (docs/engine.md, "A cycle").
//
// Header, fixed size for a given cache capacity, so that every rank's header
// travels in one plain allgather:
//   uint64 payload_bytes | uint32 flags | uint32 tune_generation | int64 clock_ns |
//   int64 fusion_threshold | int64 cycle_time_ns | int64 chunk_bytes |
//   uint64 cache_bits[ceil(capacity / 64)] | uint8 inline_payload[kInlinePayload]
// The tune fields matter in the header of the set's rank 0 only: autotune's
// parameters (docs/autotune.md), which every rank applies in the cycle the
// generation changes (0: never tuned; the other ranks send zeros).
// A payload of at most kInlinePayload bytes travels inside the header (a new
// tensor or two: no second exchange); larger ones follow in a second
// allgatherv, only from the ranks that have them.
// Payload: uint32 count, then `count` requests:
//   string name | int32 op_type, dtype, reduce_op | uint32 ndim, int64 shape[ndim] |
//   int32 root_rank, device | float64 prescale, postscale |
//   int32 process_set_id, group_id, group_size | uint32 nsplits, int64 splits[nsplits]
// (strings: uint32 length + bytes). Integers are in host byte order: every
// rank of a job runs on the same architecture. A request's `rank` is not sent;
// the receiver knows whose payload it reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/engine/request.h"

namespace hvd::runtime::engine {

inline constexpr size_t kInlinePayload = 256;       // bytes of payload carried in the header
inline constexpr uint32_t kFlagJoined = 1u << 0;    // this rank's join() is pending
inline constexpr uint32_t kFlagShutdown = 1u << 1;  // this rank stops the set's engine
inline constexpr uint32_t kFlagBlocked = 1u << 2;   // a thread waits for one of the set's ops

// Header size in bytes for a cache of `cache_capacity` bits.
size_t header_bytes(size_t cache_capacity);
// Number of 64-bit words of the cache bit vector.
size_t cache_words(size_t cache_capacity);

// Parameters autotune switches every rank to (rank 0's header).
struct TuneFields {
  uint32_t generation = 0;  // bumped on every change; 0: none
  int64_t fusion_threshold = 0;
  int64_t cycle_time_ns = 0;
  int64_t chunk_bytes = 0;  // 0: leave the transport's chunk alone

  bool operator==(const TuneFields&) const = default;
};

struct HeaderFields {
  uint64_t payload_bytes = 0;
  uint32_t flags = 0;
  int64_t clock_ns = 0;  // the sender's engine clock
  TuneFields tune;
};

// Writes a header into `out` (header_bytes(capacity) long; bits has
// cache_words(capacity) words). `payload` goes inline when it fits.
void encode_header(const HeaderFields& fields, std::span<const uint64_t> bits,
                   std::span<const uint8_t> payload, std::span<uint8_t> out);

// Reads a header in place (no copies); `bytes` is one rank's header.
class HeaderView {
 public:
  explicit HeaderView(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t payload_bytes() const;
  uint32_t flags() const;
  int64_t clock_ns() const;
  TuneFields tune() const;
  size_t words() const;
  uint64_t word(size_t i) const;
  bool payload_inline() const { return payload_bytes() <= kInlinePayload; }
  // The inline payload (payload_bytes() long); only when payload_inline().
  std::span<const uint8_t> inline_payload() const;

 private:
  std::span<const uint8_t> bytes_;
};

// Appends the payload encoding of `requests` to `out` (cleared first).
void encode_requests(std::span<const Request* const> requests, std::vector<uint8_t>& out);
// Decodes one rank's payload, appending to `out` with `rank` set.
// kInternal naming the rank when the bytes are malformed.
common::Status decode_requests(std::span<const uint8_t> payload, int32_t rank,
                               std::vector<Request>& out);

}  // namespace hvd::runtime::engine
