#include "runtime/engine/message_codec.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

namespace hvd::runtime::engine {

TEST_CASE("message codec: header sizes and round trip", "[message_codec]") {
  CHECK(cache_words(0) == 0);
  CHECK(cache_words(1) == 1);
  CHECK(cache_words(64) == 1);
  CHECK(cache_words(65) == 2);
  CHECK(header_bytes(0) == 48 + kInlinePayload);
  CHECK(header_bytes(1024) == 48 + 16 * 8 + kInlinePayload);

  std::vector<uint64_t> bits{0x8000000000000001ull, 0x2ull};
  std::vector<uint8_t> bytes(header_bytes(128));
  HeaderFields fields;
  fields.payload_bytes = 12345;  // too big to go inline
  fields.flags = kFlagJoined | kFlagShutdown;
  fields.clock_ns = -42;
  fields.tune = TuneFields{7, int64_t{16} << 20, 4000000, 262144};
  std::vector<uint8_t> big(12345, 7);
  encode_header(fields, bits, big, bytes);
  HeaderView view(bytes);
  CHECK(view.payload_bytes() == 12345);
  CHECK_FALSE(view.payload_inline());
  CHECK(view.flags() == (kFlagJoined | kFlagShutdown));
  CHECK(view.clock_ns() == -42);
  CHECK(view.tune() == TuneFields{7, int64_t{16} << 20, 4000000, 262144});
  REQUIRE(view.words() == 2);
  CHECK(view.word(0) == bits[0]);
  CHECK(view.word(1) == bits[1]);
}

TEST_CASE("message codec: small payloads travel inside the header", "[message_codec]") {
  Request a;
  a.name = "w";
  a.shape = {3, 3};
  std::vector<const Request*> requests{&a};
  std::vector<uint8_t> payload;
  encode_requests(requests, payload);
  REQUIRE(payload.size() <= kInlinePayload);
  std::vector<uint8_t> bytes(header_bytes(64));
  HeaderFields fields;
  fields.payload_bytes = payload.size();
  encode_header(fields, std::vector<uint64_t>{5}, payload, bytes);
  HeaderView view(bytes);
  CHECK(view.payload_inline());
  CHECK(view.word(0) == 5);
  std::vector<Request> out;
  REQUIRE(decode_requests(view.inline_payload(), 2, out).is_ok());
  REQUIRE(out.size() == 1);
  CHECK(same_signature(out[0], a));
  CHECK(out[0].rank == 2);
}

TEST_CASE("message codec: requests round trip", "[message_codec]") {
  Request a;
  a.name = "grad/layer1.weight";
  a.op_type = OpType::kAlltoall;
  a.dtype = DataType::kBFloat16;
  a.reduce_op = ReduceOp::kMax;
  a.shape = {7, 3, 2};
  a.root_rank = 2;
  a.device = -1;
  a.prescale_factor = 0.25;
  a.postscale_factor = 3.5;
  a.process_set_id = 4;
  a.group_id = 99;
  a.group_size = 3;
  a.splits = {1, 2, 4};
  Request b;  // defaults, an empty name and a scalar
  b.name = "";
  Request c;
  c.name = std::string("nul\0byte", 8);
  c.shape = {0};
  std::vector<const Request*> requests{&a, &b, &c};
  std::vector<uint8_t> payload{9, 9, 9};  // cleared by encode
  encode_requests(requests, payload);

  std::vector<Request> out;
  REQUIRE(decode_requests(payload, 5, out).is_ok());
  REQUIRE(out.size() == 3);
  CHECK(same_signature(out[0], a));
  CHECK(same_signature(out[1], b));
  CHECK(same_signature(out[2], c));
  CHECK(out[2].name.size() == 8);
  for (const Request& r : out) CHECK(r.rank == 5);

  // Appends to what is there.
  REQUIRE(decode_requests(payload, 6, out).is_ok());
  CHECK(out.size() == 6);
  CHECK(out[3].rank == 6);
}

TEST_CASE("message codec: malformed payloads are errors, not crashes", "[message_codec]") {
  Request a;
  a.name = "x";
  a.shape = {1, 2, 3};
  std::vector<const Request*> requests{&a};
  std::vector<uint8_t> payload;
  encode_requests(requests, payload);
  std::vector<Request> out;
  for (size_t cut = 0; cut < payload.size(); ++cut) {
    std::vector<uint8_t> truncated(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(cut));
    auto s = decode_requests(truncated, 1, out);
    CHECK(s.code() == common::StatusCode::kInternal);
    CHECK_THAT(s.message(), Catch::Contains("rank 1"));
  }
  std::vector<uint8_t> longer = payload;
  longer.push_back(0);
  CHECK_FALSE(decode_requests(longer, 1, out).is_ok());
  std::vector<uint8_t> bad_type = payload;
  bad_type[4 + 4 + 1] = 77;  // the op type after count and name
  CHECK_FALSE(decode_requests(bad_type, 1, out).is_ok());
}

}  // namespace hvd::runtime::engine
