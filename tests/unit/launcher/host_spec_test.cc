#include "launcher/host_spec.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/unit/support/untrusted_input.h"

using namespace hvd::launcher;

namespace {

// The error message of a failed parse (fails the test if it succeeded).
template <typename T>
std::string error_of(const hvd::common::Result<T>& r) {
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == hvd::common::StatusCode::kInvalidArgument);
  CHECK(r.status().message().find('\n') == std::string::npos);
  return r.status().message();
}

}  // namespace

TEST_CASE("host list: one and several hosts") {
  auto one = parse_host_list("node1:4");
  REQUIRE(one.is_ok());
  CHECK(*one == std::vector<HostSlots>{{"node1", 4}});

  auto many = parse_host_list("a:2,b:2,c:1");
  REQUIRE(many.is_ok());
  CHECK(*many == std::vector<HostSlots>{{"a", 2}, {"b", 2}, {"c", 1}});

  auto bare = parse_host_list("a,b:3");
  REQUIRE(bare.is_ok());
  CHECK(*bare == std::vector<HostSlots>{{"a", 1}, {"b", 3}});
}

TEST_CASE("host list: blanks around entries and around the colon are ignored") {
  auto hosts = parse_host_list(" a:2 ,  b : 3,c ");
  REQUIRE(hosts.is_ok());
  CHECK(*hosts == std::vector<HostSlots>{{"a", 2}, {"b", 3}, {"c", 1}});
}

TEST_CASE("host list: IPv6 addresses") {
  auto hosts = parse_host_list("[::1]:2,[fe80::1%eth0],::2");
  REQUIRE(hosts.is_ok());
  CHECK(*hosts == std::vector<HostSlots>{{"::1", 2}, {"fe80::1%eth0", 1}, {"::2", 1}});
  CHECK(describe_hosts(*hosts) == "[::1]:2, [fe80::1%eth0]:1, [::2]:1");
}

TEST_CASE("host list: every malformed entry is refused naming the token") {
  struct Case {
    const char* input;
    const char* token;
  };
  auto c = GENERATE(Case{"host:", "''"}, Case{"host:0", "'0'"}, Case{"host:x", "'x'"},
                    Case{":4", "':4'"}, Case{"host:-1", "'-1'"}, Case{"host:2x", "'2x'"},
                    Case{"a:2,a:3", "'a'"}, Case{"a:2,,b:2", "'a:2,,b:2'"}, Case{"a:2,", "'a:2,'"},
                    Case{"bad host:2", "'bad host'"}, Case{"[::1:2", "'[::1:2'"},
                    Case{"[::1]x", "'x'"}, Case{"host:99999999999", "'99999999999'"});
  INFO("input " << c.input);
  std::string message = error_of(parse_host_list(c.input));
  CHECK_THAT(message, Catch::Contains(c.token));
}

TEST_CASE("host list: brackets hold an IPv6 address or a plain name (fuzz/regressions/hostfile/)") {
  auto hosts = parse_host_list("[node1]:2");
  REQUIRE(hosts.is_ok());
  CHECK(*hosts == std::vector<HostSlots>{{"node1", 2}});
  CHECK_THAT(error_of(parse_host_list("[02de%]:3")), Catch::Contains("bad host name '02de%'"));
  CHECK_THAT(error_of(parse_hostfile_text("[eth0%x] slots=1\n", "f")),
             Catch::Contains("bad host name 'eth0%x'"));
}

TEST_CASE("host list: empty") {
  CHECK_THAT(error_of(parse_host_list("")), Catch::Contains("empty host list"));
  CHECK_THAT(error_of(parse_host_list("  ")), Catch::Contains("empty host list"));
}

TEST_CASE("host list: messages say what is wrong") {
  CHECK_THAT(error_of(parse_host_list("host:0")), Catch::Contains("greater than 0"));
  CHECK_THAT(error_of(parse_host_list("a,a")), Catch::Contains("listed twice"));
  CHECK_THAT(error_of(parse_host_list(":4")), Catch::Contains("missing host name"));
}

TEST_CASE("hostfile: slots=N and host:N and bare hosts with comments and blank lines") {
  const char* text =
      "# cluster\n"
      "\n"
      "node1 slots=4\n"
      "   node2   slots=2   # two GPUs\n"
      "node3:3\n"
      "\tnode4\r\n"
      "[::1] slots=2\n"
      "#node5 slots=9\n";
  auto hosts = parse_hostfile_text(text, "hosts.txt");
  REQUIRE(hosts.is_ok());
  CHECK(*hosts ==
        std::vector<HostSlots>{{"node1", 4}, {"node2", 2}, {"node3", 3}, {"node4", 1}, {"::1", 2}});
}

TEST_CASE("hostfile: bad lines are reported as FILE:LINE naming the token") {
  struct Case {
    const char* text;
    const char* where;
    const char* token;
  };
  auto c = GENERATE(
      Case{"a slots=2\nb slots=x\n", "hf:2: ", "'x'"}, Case{"a slots=0\n", "hf:1: ", "'0'"},
      Case{"\n\na slot=2\n", "hf:3: ", "'slot=2'"}, Case{"a slots=2 extra\n", "hf:1: ", "'extra'"},
      Case{"a:2 slots=3\n", "hf:1: ", "'slots=3'"},
      Case{"a slots=1 slots=2\n", "hf:1: ", "'slots=2'"}, Case{"a\n# b\na\n", "hf:3: ", "'a'"},
      Case{"a:x\n", "hf:1: ", "'x'"}, Case{":4 slots=1\n", "hf:1: ", "':4'"},
      Case{"a slots=\n", "hf:1: ", "''"});
  INFO("text " << c.text);
  std::string message = error_of(parse_hostfile_text(c.text, "hf"));
  CHECK(message.rfind(c.where, 0) == 0);
  CHECK_THAT(message, Catch::Contains(c.token));
}

TEST_CASE("hostfile: no hosts at all is an error") {
  CHECK_THAT(error_of(parse_hostfile_text("# nothing\n\n", "hf")), Catch::Contains("no hosts"));
  CHECK_THAT(error_of(parse_hostfile_text("", "hf")), Catch::Contains("no hosts"));
}

TEST_CASE("hostfile: read from disk and a missing file is named") {
  char path[] = "/tmp/hvd_hostfile_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << "localhost slots=2\n127.0.0.1 slots=1";  // no final newline
  auto hosts = parse_hostfile(path);
  REQUIRE(hosts.is_ok());
  CHECK(*hosts == std::vector<HostSlots>{{"localhost", 2}, {"127.0.0.1", 1}});
  std::ofstream(path) << "localhost slots=two\n";
  CHECK_THAT(error_of(parse_hostfile(path)), Catch::StartsWith(std::string(path) + ":1: "));
  std::remove(path);
  CHECK_THAT(error_of(parse_hostfile(path)), Catch::Contains(path));
}

using hvd::test::printable_ascii;

// Issue 21: a host that asks for more workers than one agent starts (4096)
// is refused when parsed, before any per-rank data is built.
TEST_CASE("host list and hostfile: a slot count above one agent's limit is refused") {
  std::string list = error_of(parse_host_list("a:2,b:1000000"));
  CHECK_THAT(list, Catch::Contains("'1000000'") && Catch::Contains("4096"));
  CHECK(parse_host_list("a:4096").is_ok());
  CHECK_THAT(error_of(parse_host_list("a:4097")), Catch::Contains("4096"));
  std::string file = error_of(parse_hostfile_text("a slots=2\nb slots=99999999\n", "hf"));
  CHECK_THAT(file, Catch::StartsWith("hf:2: ") && Catch::Contains("'99999999'") &&
                       Catch::Contains("4096"));
}

// Issue 21: bytes of a hostfile are escaped (\xNN) in the error line, never
// written raw to the terminal.
TEST_CASE("hostfile and host list: control and non-ASCII bytes are escaped in errors") {
  std::string file = error_of(parse_hostfile_text(std::string("a\x1b[31m\x01\xfe slots=1\n"), "hf"));
  CHECK(printable_ascii(file));
  CHECK_THAT(file, Catch::Contains("a\\x1b[31m\\x01\\xfe"));
  std::string slots = error_of(parse_hostfile_text(std::string("a slots=\x07\n"), "hf"));
  CHECK(printable_ascii(slots));
  CHECK_THAT(slots, Catch::Contains("\\x07"));
  std::string list = error_of(parse_host_list(std::string("h\x7f:1")));
  CHECK(printable_ascii(list));
  CHECK_THAT(list, Catch::Contains("h\\x7f"));
}
