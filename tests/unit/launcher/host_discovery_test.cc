#include "launcher/host_discovery.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "tests/unit/support/temp_file.h"

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

}  // namespace hvd::launcher
