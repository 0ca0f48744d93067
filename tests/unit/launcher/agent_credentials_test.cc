#include "launcher/agent_credentials.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/unit/support/temp_file.h"

using namespace hvd::launcher;

TEST_CASE("a remote host without a secret file is a usage error naming host and option") {
  LaunchOptions options;
  auto r = remote_credentials(options, "h2");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("'h2'") && Catch::Contains("--secret-file") &&
                                       Catch::Contains("HVD_SECRET_FILE"));
}

TEST_CASE("the secret file is read and checked") {
  LaunchOptions options;
  options.secret_file = hvd::test::write_temp_file("0123456789abcdef0123456789abcdef\n");
  REQUIRE(chmod(options.secret_file.c_str(), 0600) == 0);
  auto r = remote_credentials(options, "h2");
  REQUIRE(r.is_ok());
  CHECK(r->secret == "0123456789abcdef0123456789abcdef");
  CHECK(r->channel != nullptr);

  REQUIRE(chmod(options.secret_file.c_str(), 0644) == 0);
  auto loose = remote_credentials(options, "h2");
  REQUIRE_FALSE(loose.is_ok());
  CHECK(loose.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(loose.status().message(), Catch::Contains(options.secret_file));
  std::remove(options.secret_file.c_str());

  auto missing = remote_credentials(options, "h2");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(missing.status().message(), Catch::Contains(options.secret_file));
}

TEST_CASE("unreadable TLS files are usage errors naming the file") {
  LaunchOptions options;
  options.secret_file = hvd::test::write_temp_file("0123456789abcdef0123456789abcdef");
  REQUIRE(chmod(options.secret_file.c_str(), 0600) == 0);
  options.tls = {"/no/such/cert.pem", "/no/such/key.pem", "/no/such/ca.pem"};
  auto r = remote_credentials(options, "h2");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("/no/such/cert.pem"));
  std::remove(options.secret_file.c_str());
}
