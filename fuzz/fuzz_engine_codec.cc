// The engine's negotiation wire format (runtime/engine/message_codec.h).
// First byte even: the rest is one rank's request payload for
// decode_requests; whatever decodes must encode (encode_requests) to the
// very same bytes, and a refusal is kInternal naming the rank. First byte
// odd: the rest is a header for a cache of (second byte x 16) bits, read
// with HeaderView and written back with encode_header to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "runtime/engine/message_codec.h"

namespace engine = hvd::runtime::engine;

namespace {

void fuzz_payload(std::span<const uint8_t> payload) {
  constexpr int32_t kRank = 3;
  std::vector<engine::Request> requests;
  auto status = engine::decode_requests(payload, kRank, requests);
  if (!status.is_ok()) {
    FUZZ_CHECK(status.code() == hvd::common::StatusCode::kInternal, status.message());
    FUZZ_CHECK(status.message().find("rank 3") != std::string::npos,
               "refusal without the rank: " + status.message());
    return;
  }
  std::vector<const engine::Request*> pointers;
  for (const auto& r : requests) {
    FUZZ_CHECK(r.rank == kRank, "a decoded request has another rank");
    pointers.push_back(&r);
  }
  std::vector<uint8_t> encoded;
  engine::encode_requests(pointers, encoded);
  FUZZ_CHECK(std::equal(encoded.begin(), encoded.end(), payload.begin(), payload.end()),
             "encode(decode(x)) != x");
}

void fuzz_header(std::span<const uint8_t> input) {
  if (input.empty()) return;
  const size_t capacity = size_t{input[0]} * 16;
  const size_t bytes = engine::header_bytes(capacity);
  if (input.size() - 1 < bytes) return;
  const std::span<const uint8_t> header = input.subspan(1, bytes);
  engine::HeaderView view(header);
  FUZZ_CHECK(view.words() == engine::cache_words(capacity), "words() is not the capacity's");
  std::vector<uint64_t> bits(view.words());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = view.word(i);
  std::span<const uint8_t> payload;
  if (view.payload_inline()) {
    payload = view.inline_payload();
    FUZZ_CHECK(payload.size() == view.payload_bytes(), "inline payload of another size");
  }
  engine::HeaderFields fields;
  fields.payload_bytes = view.payload_bytes();
  fields.flags = view.flags();
  fields.clock_ns = view.clock_ns();
  fields.tune = view.tune();
  // The inline payload area past payload_bytes is not written: start from the input.
  std::vector<uint8_t> out(header.begin(), header.end());
  const std::vector<uint8_t> payload_copy(payload.begin(), payload.end());
  engine::encode_header(fields, bits, payload_copy, out);
  FUZZ_CHECK(std::equal(out.begin(), out.end(), header.begin(), header.end()),
             "encode_header(HeaderView(x)) != x");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzz_payload(rest);
  } else {
    fuzz_header(rest);
  }
  return 0;
}
