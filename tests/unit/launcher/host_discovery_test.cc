#include "launcher/host_discovery.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "tests/unit/support/temp_file.h"
#include "tests/unit/support/untrusted_input.h"

namespace hvd::launcher {

namespace {

using namespace std::chrono_literals;

std::string script(const std::string& body) {
  std::string path = hvd::test::write_temp_file("#!/bin/sh\n" + body + "\n");
  REQUIRE(::chmod(path.c_str(), 0700) == 0);
  return path;
}

}  // namespace

TEST_CASE("host discovery: host and host:slots lines, comments, default slots", "[discovery]") {
  auto hosts = parse_discovery_output("# cluster\nh1:4\n\n  h2  \n10.0.0.3:2\n[fe80::1]\n", 3,
                                      "d.sh");
  REQUIRE(hosts.is_ok());
  CHECK(*hosts == std::vector<HostSlots>{{"h1", 4}, {"h2", 3}, {"10.0.0.3", 2}, {"fe80::1", 3}});
}

TEST_CASE("host discovery: a bad line is an error naming the script and the line",
          "[discovery]") {
  auto bad = parse_discovery_output("h1:2\nh2:x\n", 1, "d.sh");
  CHECK(bad.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(),
             Catch::StartsWith("--host-discovery-script d.sh: line 2 'h2:x': "));
  CHECK(parse_discovery_output("h1 h2\n", 1, "d.sh").status().message() ==
        "--host-discovery-script d.sh: line 1 'h1 h2': expected one host or host:slots per line");
  CHECK(parse_discovery_output("h1\nh1:2\n", 1, "d.sh").status().message() ==
        "--host-discovery-script d.sh: line 2 'h1:2': host 'h1' is listed twice");
  CHECK(parse_discovery_output("# none\n\n", 1, "d.sh").status().message() ==
        "--host-discovery-script d.sh: printed no hosts");
}

TEST_CASE("host discovery: runs the script with a deadline", "[discovery]") {
  auto ok = run_host_discovery(script("echo h1:2; echo h2"), 4, 5000ms);
  REQUIRE(ok.is_ok());
  CHECK(*ok == std::vector<HostSlots>{{"h1", 2}, {"h2", 4}});

  const std::string failing = script("echo 'cannot reach the scheduler' >&2; exit 3");
  auto failed = run_host_discovery(failing, 1, 5000ms);
  CHECK(failed.status().message() == "--host-discovery-script " + failing +
                                         ": exited with code 3: cannot reach the scheduler");

  const std::string slow = script("echo h1; sleep 30");
  auto start = std::chrono::steady_clock::now();
  auto late = run_host_discovery(slow, 1, 300ms);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(late.status().message() ==
        "--host-discovery-script " + slow + ": did not finish within 300 ms");

  auto missing = run_host_discovery("/nonexistent/discover.sh", 1, 1000ms);
  CHECK(missing.status().code() == common::StatusCode::kInvalidArgument);
  CHECK_THAT(missing.status().message(),
             Catch::StartsWith("--host-discovery-script /nonexistent/discover.sh: "));
}

using hvd::test::printable_ascii;

// Issue 21: what a script prints is escaped (\xNN) in the error line, its
// stderr too; a default slot count above one agent's limit is refused.
TEST_CASE("host discovery: binary output is escaped in errors", "[discovery]") {
  auto bad = parse_discovery_output(std::string("h1\n\x1b]0;owned\x07h2:x\xff\n"), 1, "d.sh");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(printable_ascii(bad.status().message()));
  CHECK_THAT(bad.status().message(),
             Catch::Contains("line 2 '\\x1b]0;owned\\x07h2:x\\xff'"));

  const std::string noisy = script("printf 'no\\033[2Jway\\n' >&2; exit 4");
  auto failed = run_host_discovery(noisy, 1, 5000ms);
  REQUIRE_FALSE(failed.is_ok());
  CHECK(printable_ascii(failed.status().message()));
  CHECK_THAT(failed.status().message(), Catch::EndsWith(": no\\x1b[2Jway"));
}

TEST_CASE("host discovery: slots above one agent's limit are refused", "[discovery]") {
  auto explicit_slots = parse_discovery_output("h1:5000\n", 1, "d.sh");
  CHECK_THAT(explicit_slots.status().message(),
             Catch::Contains("line 1 'h1:5000'") && Catch::Contains("4096"));
  auto default_slots = parse_discovery_output("h1\n", 100000, "d.sh");
  CHECK_THAT(default_slots.status().message(),
             Catch::Contains("--slots-per-host 100000") && Catch::Contains("4096"));
}

}  // namespace hvd::launcher
