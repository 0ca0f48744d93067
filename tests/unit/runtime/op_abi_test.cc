// Reading hvd_op as callers of other versions lay it out (runtime/op_abi.h,
// c_api.h "Versioning"): older structs get defaults, newer ones are accepted
// only with an all-zero tail, a missing struct_size is a clear error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/op_abi.h"

namespace hvd::runtime {

namespace {

// A caller's struct of `size` bytes: this libhvd's fields, then `tail`.
std::vector<unsigned char> caller_struct(uint32_t size, unsigned char tail = 0) {
  std::vector<unsigned char> bytes(std::max<size_t>(size, sizeof(hvd_op)) + 16, tail);
  hvd_op op = hvd_op_defaults(HVD_OPTYPE_BROADCAST);
  op.struct_size = size;
  op.root_rank = 7;
  op.stream = reinterpret_cast<void*>(0x1234);
  std::memcpy(bytes.data(), &op, std::min<size_t>(size, sizeof(op)));
  // What lies past the caller's struct is not the caller's: garbage.
  std::memset(bytes.data() + size, 0xAB, bytes.size() - size);
  if (size > sizeof(hvd_op)) {
    std::memset(bytes.data() + sizeof(hvd_op), tail, size - sizeof(hvd_op));
  }
  std::memcpy(bytes.data(), &size, sizeof(size));  // struct_size, whatever the size
  return bytes;
}

const hvd_op* as_op(const std::vector<unsigned char>& bytes) {
  return reinterpret_cast<const hvd_op*>(bytes.data());
}

}  // namespace

TEST_CASE("op abi: this version's struct is read as it is", "[op_abi]") {
  auto bytes = caller_struct(sizeof(hvd_op));
  auto op = read_op(as_op(bytes), "hvd_enqueue");
  REQUIRE(op.is_ok());
  CHECK(op.value().op_type == HVD_OPTYPE_BROADCAST);
  CHECK(op.value().root_rank == 7);
  CHECK(op.value().device == HVD_DEVICE_CPU);
  CHECK(op.value().stream == reinterpret_cast<void*>(0x1234));
}

TEST_CASE("op abi: an older, shorter struct gets the defaults of what it lacks", "[op_abi]") {
  auto bytes = caller_struct(HVD_OP_MIN_SIZE);  // before `stream`; garbage follows
  auto op = read_op(as_op(bytes), "hvd_enqueue");
  REQUIRE(op.is_ok());
  CHECK(op.value().root_rank == 7);
  CHECK(op.value().stream == nullptr);
  CHECK(op.value().struct_size == sizeof(hvd_op));
}

TEST_CASE("op abi: a newer struct is accepted only with an all-zero tail", "[op_abi]") {
  const uint32_t newer = sizeof(hvd_op) + 8;
  auto zero_tail = caller_struct(newer, 0);
  auto op = read_op(as_op(zero_tail), "hvd_enqueue");
  REQUIRE(op.is_ok());
  CHECK(op.value().root_rank == 7);

  auto set_tail = caller_struct(newer, 0);
  set_tail[sizeof(hvd_op) + 3] = 1;
  auto refused = read_op(as_op(set_tail), "hvd_enqueue");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == common::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "hvd_enqueue: hvd_op is " + std::to_string(newer) + " bytes, newer than this libhvd (" +
            std::to_string(sizeof(hvd_op)) + " bytes): byte " +
            std::to_string(sizeof(hvd_op) + 3) +
            " sets a field this libhvd does not know; use a newer libhvd or leave that field at "
            "its default");
}

TEST_CASE("op abi: a missing or too small struct_size is refused clearly", "[op_abi]") {
  auto unset = caller_struct(0);
  auto r = read_op(as_op(unset), "hvd_enqueue");
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("struct_size is 0, below the oldest hvd_op layout") &&
                 Catch::Contains("set it to sizeof(hvd_op)"));
  auto small = caller_struct(HVD_OP_MIN_SIZE - 8);
  r = read_op(as_op(small), "hvd_enqueue");
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("struct_size is " +
                                                   std::to_string(HVD_OP_MIN_SIZE - 8)));
  CHECK_FALSE(read_op(nullptr, "hvd_enqueue").is_ok());
}

TEST_CASE("op abi: arrays are strided by the first op's struct_size", "[op_abi]") {
  const uint32_t old_size = HVD_OP_MIN_SIZE;
  std::vector<unsigned char> array(3 * old_size);
  for (int i = 0; i < 3; ++i) {
    hvd_op op = hvd_op_defaults(HVD_OPTYPE_ALLREDUCE);
    op.struct_size = old_size;
    op.root_rank = 10 + i;
    std::memcpy(array.data() + i * old_size, &op, old_size);
  }
  auto ops = read_ops(reinterpret_cast<const hvd_op*>(array.data()), 3, "hvd_enqueue_group");
  REQUIRE(ops.is_ok());
  REQUIRE(ops.value().size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(ops.value()[static_cast<size_t>(i)].root_rank == 10 + i);
    CHECK(ops.value()[static_cast<size_t>(i)].stream == nullptr);
  }

  // An element of another size is refused, naming it.
  uint32_t other = sizeof(hvd_op);
  std::memcpy(array.data() + 2 * old_size, &other, sizeof(other));
  auto mixed = read_ops(reinterpret_cast<const hvd_op*>(array.data()), 3, "hvd_enqueue_group");
  REQUIRE_FALSE(mixed.is_ok());
  CHECK_THAT(mixed.status().message(),
             Catch::Contains("op 2 (hvd_op) has struct_size " + std::to_string(other)) &&
                 Catch::Contains("every op of the array must have the same size"));
  CHECK_FALSE(read_ops(reinterpret_cast<const hvd_op*>(array.data()), 0, "g").is_ok());
}

}  // namespace hvd::runtime
