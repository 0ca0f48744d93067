#include <catch2/catch.hpp>

#include "common/token.h"

using namespace hvd::common;

TEST_CASE("generate_token gives 64 hex characters, different every time") {
  auto a = generate_token();
  auto b = generate_token();
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK(a->size() == 64);
  CHECK(a->find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(*a != *b);
}

TEST_CASE("tokens_equal compares whole tokens") {
  CHECK(tokens_equal("abc", "abc"));
  CHECK_FALSE(tokens_equal("abc", "abd"));
  CHECK_FALSE(tokens_equal("abc", "ab"));
  CHECK_FALSE(tokens_equal("", "a"));
  CHECK(tokens_equal("", ""));
}
