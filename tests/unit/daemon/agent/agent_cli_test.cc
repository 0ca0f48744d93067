#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "daemon/agent/agent_cli.h"

using namespace std::chrono_literals;
using hvd::daemon::AgentCliExit;
using hvd::daemon::AgentConfig;
using hvd::daemon::parse_agent_command_line;
using hvd::daemon::parse_listen_address;
namespace agent_exit = hvd::daemon::agent_exit;

namespace {

constexpr int kDefaultSlots = 7;

hvd::daemon::AgentCliOutcome parse(std::vector<std::string> args,
                                   std::map<std::string, std::string> env = {}) {
  return parse_agent_command_line(
      args,
      [env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      kDefaultSlots);
}

AgentConfig config_of(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  auto outcome = parse(std::move(args), std::move(env));
  if (const auto* exit = std::get_if<AgentCliExit>(&outcome)) FAIL(exit->err);
  return std::get<AgentConfig>(outcome);
}

// The one-line usage error for `args`; it must name `token`.
std::string error_of(std::vector<std::string> args, const std::string& token) {
  args.insert(args.begin(), {"--secret-file", "/etc/hvd/secret"});
  auto outcome = parse(args);
  REQUIRE(std::holds_alternative<AgentCliExit>(outcome));
  const auto& exit = std::get<AgentCliExit>(outcome);
  CHECK(exit.code == agent_exit::kUsage);
  CHECK(exit.out.empty());
  CHECK_THAT(exit.err, Catch::StartsWith("hvd-agent: error: "));
  CHECK_THAT(exit.err, Catch::Contains(token));
  CHECK(std::count(exit.err.begin(), exit.err.end(), '\n') == 1);
  return exit.err;
}

}  // namespace

TEST_CASE("hvd-agent defaults") {
  auto config = config_of({"--secret-file", "/etc/hvd/secret"});
  CHECK(config.secret_file == "/etc/hvd/secret");
  CHECK(config.listen.host == "0.0.0.0");
  CHECK(config.listen.port == 29470);
  CHECK(config.listen.port == hvd::daemon::kAgentPort);
  CHECK(config.slots == kDefaultSlots);
  CHECK_FALSE(config.tls.enabled());
  CHECK(config.orphan_grace == 30s);
  CHECK(config.log_level == spdlog::level::info);
}

TEST_CASE("hvd-agent takes every flag") {
  auto config = config_of({"--secret-file=/s", "--listen", "[::]:1234", "--slots", "3",
                           "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem",
                           "--orphan-grace", "2.5", "--log-level", "debug"});
  CHECK(config.secret_file == "/s");
  CHECK(config.listen.host == "::");
  CHECK(config.listen.port == 1234);
  CHECK(config.slots == 3);
  CHECK(config.tls.cert == "c.pem");
  CHECK(config.tls.key == "k.pem");
  CHECK(config.tls.ca == "ca.pem");
  CHECK(config.orphan_grace == 2500ms);
  CHECK(config.log_level == spdlog::level::debug);
  // 0 disables orphan handling; a repeated flag takes its last value.
  auto again = config_of({"--secret-file", "/s", "--orphan-grace", "0", "--slots", "1",
                          "--slots", "2"});
  CHECK(again.orphan_grace == 0ms);
  CHECK(again.slots == 2);
}

TEST_CASE("hvd-agent secret file: the flag, else HVD_SECRET_FILE, else an error") {
  CHECK(config_of({}, {{"HVD_SECRET_FILE", "/from/env"}}).secret_file == "/from/env");
  CHECK(config_of({"--secret-file", "/flag"}, {{"HVD_SECRET_FILE", "/from/env"}}).secret_file ==
        "/flag");
  for (auto env : {std::map<std::string, std::string>{},
                   std::map<std::string, std::string>{{"HVD_SECRET_FILE", ""}}}) {
    auto outcome = parse({}, env);
    REQUIRE(std::holds_alternative<AgentCliExit>(outcome));
    CHECK(std::get<AgentCliExit>(outcome).code == agent_exit::kUsage);
    CHECK_THAT(std::get<AgentCliExit>(outcome).err, Catch::Contains("--secret-file"));
    CHECK_THAT(std::get<AgentCliExit>(outcome).err, Catch::Contains("HVD_SECRET_FILE"));
  }
}

TEST_CASE("hvd-agent names each bad value") {
  error_of({"--slots", "0"}, "--slots '0'");
  error_of({"--slots", "-2"}, "-2");
  error_of({"--slots", "four"}, "--slots 'four'");
  error_of({"--slots", "99999999999"}, "99999999999");
  error_of({"--slots", "2x"}, "2x");
  error_of({"--orphan-grace", "-1"}, "--orphan-grace '-1'");
  error_of({"--orphan-grace", "soon"}, "soon");
  error_of({"--orphan-grace", "nan"}, "nan");
  error_of({"--orphan-grace", "inf"}, "inf");
  error_of({"--orphan-grace", "1e99"}, "1e99");
  error_of({"--log-level", "chatty"}, "chatty");
  error_of({"--listen", "0.0.0.0"}, "--listen '0.0.0.0'");
  error_of({"--listen", "host:port"}, "port 'port'");
  error_of({"--listen", "::1:29470"}, "brackets");
  error_of({"--listen", "[::1:29470"}, "[::1:29470");
  error_of({"--listen", "[nope]:1"}, "'nope'");
  error_of({"--listen", "h:65536"}, "65536");
  error_of({"--listen", "bad host:1"}, "'bad host'");
  error_of({"--bogus"}, "--bogus");
  error_of({"stray"}, "stray");
  error_of({"--slots"}, "--slots");
  // The same line as hvdrun's for the same mistake (common/cli_options.h).
  CHECK(error_of({"--secret-file", ""}, "--secret-file") ==
        "hvd-agent: error: --secret-file '': expected a file name\n");
}

TEST_CASE("hvd-agent TLS files: all three or none") {
  error_of({"--tls-cert", "c"}, "--tls-key");
  error_of({"--tls-cert", "c", "--tls-key", "k"}, "--tls-ca");
  error_of({"--tls-key", "k", "--tls-ca", "a"}, "--tls-cert");
  error_of({"--tls-ca", "a"}, "--tls-cert");
  CHECK(config_of({"--secret-file", "/s", "--tls-cert", "c", "--tls-key", "k", "--tls-ca", "a"})
            .tls.enabled());
}

TEST_CASE("hvd-agent --help and --version exit 0") {
  auto help = parse({"--help"});
  REQUIRE(std::holds_alternative<AgentCliExit>(help));
  CHECK(std::get<AgentCliExit>(help).code == 0);
  for (const char* flag : {"--secret-file", "--listen", "--slots", "--tls-cert", "--tls-key",
                           "--tls-ca", "--orphan-grace", "--log-level", "--version"}) {
    CHECK_THAT(std::get<AgentCliExit>(help).out, Catch::Contains(flag));
  }
  auto version = parse({"--version"});
  REQUIRE(std::holds_alternative<AgentCliExit>(version));
  CHECK(std::get<AgentCliExit>(version).code == 0);
  CHECK_THAT(std::get<AgentCliExit>(version).out, Catch::StartsWith("hvd-agent (hvd) "));
}

TEST_CASE("parse_listen_address accepts IPv4, host names and bracketed IPv6") {
  struct Case {
    std::string text, host;
    int port;
  };
  for (const auto& c : std::vector<Case>{{"0.0.0.0:29470", "0.0.0.0", 29470},
                                         {"127.0.0.1:0", "127.0.0.1", 0},
                                         {"node-1.example.org:80", "node-1.example.org", 80},
                                         {"[::]:29470", "::", 29470},
                                         {"[::1]:65535", "::1", 65535}}) {
    INFO(c.text);
    auto address = parse_listen_address(c.text);
    REQUIRE(address.is_ok());
    CHECK(address->host == c.host);
    CHECK(address->port == c.port);
  }
  CHECK(hvd::daemon::to_string({"::", 5}) == "[::]:5");
  CHECK(hvd::daemon::to_string({"10.0.0.1", 5}) == "10.0.0.1:5");
  for (const char* bad : {"", ":80", "host:", "host", "[::1]", "[::1]80", "h:+1", "h:-1", "h: 1",
                          "[]:1", "a:b:c"}) {
    INFO(bad);
    auto address = parse_listen_address(bad);
    REQUIRE_FALSE(address.is_ok());
    CHECK_THAT(address.status().message(), Catch::Contains(std::string("'") + bad + "'"));
  }
}

TEST_CASE("hvd-agent --secret-stdin and --exit-on-stdin-eof (hvdrun --ssh)") {
  auto plain = config_of({"--secret-file", "/etc/hvd/secret"});
  CHECK_FALSE(plain.secret_stdin);
  CHECK_FALSE(plain.exit_on_stdin_eof);

  auto config = config_of({"--secret-stdin", "--exit-on-stdin-eof", "--listen", "0.0.0.0:0"});
  CHECK(config.secret_stdin);
  CHECK(config.exit_on_stdin_eof);
  CHECK(config.secret_file.empty());
  CHECK(config.listen.port == 0);
  // HVD_SECRET_FILE is not consulted with --secret-stdin.
  CHECK(config_of({"--secret-stdin"}, {{"HVD_SECRET_FILE", "/x"}}).secret_file.empty());

  // Mutually exclusive with --secret-file; the error names both.
  auto outcome = parse({"--secret-stdin", "--secret-file", "/etc/hvd/secret"});
  REQUIRE(std::holds_alternative<AgentCliExit>(outcome));
  const auto& exit = std::get<AgentCliExit>(outcome);
  CHECK(exit.code == agent_exit::kUsage);
  CHECK_THAT(exit.err, Catch::StartsWith("hvd-agent: error: "));
  CHECK_THAT(exit.err, Catch::Contains("--secret-stdin"));
  CHECK_THAT(exit.err, Catch::Contains("--secret-file"));

  // Without any secret source the error mentions --secret-stdin too.
  auto none = parse({"--exit-on-stdin-eof"});
  REQUIRE(std::holds_alternative<AgentCliExit>(none));
  CHECK_THAT(std::get<AgentCliExit>(none).err, Catch::Contains("--secret-stdin"));
}

TEST_CASE("hvd-agent --containment, else HVD_CONTAINMENT, else auto") {
  using hvd::daemon::ContainmentMode;
  auto config = config_of({"--secret-file", "/etc/hvd/secret"});
  CHECK(config.containment == ContainmentMode::kAuto);
  config = config_of({"--secret-file", "/etc/hvd/secret", "--containment", "subreaper"},
                     {{"HVD_CONTAINMENT", "cgroup"}});
  CHECK(config.containment == ContainmentMode::kSubreaper);
  CHECK(config.containment_source == "--containment ");
  config = config_of({"--secret-file", "/etc/hvd/secret"}, {{"HVD_CONTAINMENT", "cgroup"}});
  CHECK(config.containment == ContainmentMode::kCgroup);
  CHECK(config.containment_source == "HVD_CONTAINMENT=");
  CHECK(error_of({"--containment", "cgroups"}, "'cgroups'") ==
        "hvd-agent: error: --containment 'cgroups': expected auto, cgroup or subreaper\n");
}
