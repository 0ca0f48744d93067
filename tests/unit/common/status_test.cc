#include <catch2/catch.hpp>

#include "common/data_type.h"
#include "common/status.h"

using namespace hvd::common;

TEST_CASE("Status carries code and message, context prefixes the message") {
  Status ok;
  CHECK(ok.is_ok());
  CHECK(ok.to_string() == "OK");
  Status s = timeout_error("rank 1 did not answer");
  CHECK_FALSE(s.is_ok());
  CHECK(s.to_string() == "Timeout: rank 1 did not answer");
  CHECK(s.with_context("allreduce").message() == "allreduce: rank 1 did not answer");
  CHECK(ok.with_context("x").is_ok());
}

TEST_CASE("Result holds a value or the Status that explains its absence") {
  Result<int> v = 7;
  REQUIRE(v.is_ok());
  CHECK(*v == 7);
  Result<int> e = invalid_argument("bad");
  CHECK_FALSE(e.is_ok());
  CHECK(e.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Data type sizes and names") {
  CHECK(data_type_size(DataType::kFloat64) == 8);
  CHECK(data_type_size(DataType::kBFloat16) == 2);
  CHECK(data_type_size(DataType::kBool) == 1);
  CHECK(data_type_name(DataType::kInt32) == "int32");
  CHECK(is_valid_data_type(9));
  CHECK_FALSE(is_valid_data_type(10));
  CHECK_FALSE(is_valid_reduce_op(-1));
}
