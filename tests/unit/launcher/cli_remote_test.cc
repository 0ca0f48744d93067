// The options for remote hosts: --agent-port, --secret-file (HVD_SECRET_FILE),
// --tls-*, --network-interface.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "launcher/cli.h"

using namespace hvd::launcher;

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

LaunchOptions parse_ok(std::vector<std::string> args) {
  args.push_back("prog");
  CliOutcome outcome = parse_command_line(args, fake_getenv);
  if (auto* e = std::get_if<CliExit>(&outcome))
    FAIL("unexpected exit " << e->code << ": " << e->err);
  return std::get<LaunchOptions>(std::move(outcome));
}

std::string parse_error(std::vector<std::string> args) {
  args.push_back("prog");
  CliOutcome outcome = parse_command_line(args, fake_getenv);
  auto* e = std::get_if<CliExit>(&outcome);
  REQUIRE(e != nullptr);
  CHECK(e->code == 2);
  CHECK_THAT(e->err, Catch::StartsWith("hvdrun: error: "));
  CHECK(e->err.find('\n') == e->err.size() - 1);
  return e->err;
}

}  // namespace

TEST_CASE("remote options have their defaults") {
  g_env.clear();
  auto o = parse_ok({"-np", "2"});
  CHECK(o.agent_port == 29470);
  CHECK(o.agent_port == kDefaultAgentPort);
  CHECK(o.secret_file.empty());
  CHECK_FALSE(o.tls.enabled());
  CHECK(o.network_interfaces.empty());
}

TEST_CASE("agent port: --agent-port takes a port number and names a bad one") {
  g_env.clear();
  CHECK(parse_ok({"-np", "1", "--agent-port", "1234"}).agent_port == 1234);
  CHECK(parse_ok({"-np", "1", "--agent-port=65535"}).agent_port == 65535);
  for (const char* bad : {"abc", "0", "65536", "-5", "12x", ""}) {
    INFO(bad);
    CHECK_THAT(parse_error({"-np", "1", "--agent-port", bad}),
               Catch::Contains(std::string("--agent-port '") + bad + "'"));
  }
}

TEST_CASE("secret file: --secret-file, else HVD_SECRET_FILE") {
  g_env.clear();
  CHECK(parse_ok({"-np", "1", "--secret-file", "/etc/hvd/secret"}).secret_file ==
        "/etc/hvd/secret");
  g_env["HVD_SECRET_FILE"] = "/from/env";
  CHECK(parse_ok({"-np", "1"}).secret_file == "/from/env");
  CHECK(parse_ok({"-np", "1", "--secret-file", "/flag"}).secret_file == "/flag");
  CHECK_THAT(parse_error({"-np", "1", "--secret-file="}), Catch::Contains("--secret-file"));
  // The same line as hvd-agent's for the same mistake (common/cli_options.h).
  CHECK(parse_error({"-np", "1", "--secret-file", "", "true"}) ==
        "hvdrun: error: --secret-file '': expected a file name\n");
  g_env.clear();
}

TEST_CASE("TLS: --tls-cert, --tls-key and --tls-ca go together") {
  g_env.clear();
  auto o = parse_ok({"-np", "1", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem"});
  CHECK(o.tls.enabled());
  CHECK(o.tls.cert == "c.pem");
  CHECK(o.tls.key == "k.pem");
  CHECK(o.tls.ca == "ca.pem");
  CHECK_THAT(parse_error({"-np", "1", "--tls-cert", "c.pem"}), Catch::Contains("--tls-key"));
  CHECK_THAT(parse_error({"-np", "1", "--tls-cert", "c.pem", "--tls-key", "k.pem"}),
             Catch::Contains("--tls-ca"));
  CHECK_THAT(parse_error({"-np", "1", "--tls-ca", "ca.pem", "--tls-key", "k.pem"}),
             Catch::Contains("--tls-cert"));
}

TEST_CASE("interfaces: --network-interface lists names in order") {
  g_env.clear();
  CHECK(parse_ok({"-np", "1", "--network-interface", "eth0"}).network_interfaces ==
        std::vector<std::string>{"eth0"});
  CHECK(parse_ok({"-np", "1", "--network-interface", "ib0, eth0"}).network_interfaces ==
        std::vector<std::string>{"ib0", "eth0"});
  CHECK_THAT(parse_error({"-np", "1", "--network-interface", "eth0,,ib0"}),
             Catch::Contains("--network-interface 'eth0,,ib0'"));
  CHECK_THAT(parse_error({"-np", "1", "--network-interface", "eth0,a b"}),
             Catch::Contains("'a b' is not an interface name"));
}

TEST_CASE("the remote options are hvdrun's, not the command's") {
  g_env.clear();
  CliOutcome outcome =
      parse_command_line({"-np", "1", "--agent-port", "4000", "prog", "--agent-port", "x"}, fake_getenv);
  auto& o = std::get<LaunchOptions>(outcome);
  CHECK(o.agent_port == 4000);
  CHECK(o.command == std::vector<std::string>{"prog", "--agent-port", "x"});
}

TEST_CASE("hvdrun --ssh and its options") {
  g_env.clear();
  auto plain = parse_ok({"-np", "2"});
  CHECK_FALSE(plain.ssh);
  CHECK(plain.ssh_port == 0);
  CHECK(plain.ssh_command == std::vector<std::string>{"ssh"});
  CHECK(plain.ssh_agent_path == "hvd-agent");

  g_env["HVD_SECRET_FILE"] = "/from/env";
  auto o = parse_ok({"-H", "a:1,b:1", "--ssh", "--ssh-port", "2222", "--ssh-command",
                     "  my-wrap  ssh -F cfg ", "--ssh-agent-path", "/opt/hvd/bin/hvd-agent"});
  CHECK(o.ssh);
  CHECK(o.ssh_port == 2222);
  CHECK(o.ssh_command == std::vector<std::string>{"my-wrap", "ssh", "-F", "cfg"});
  CHECK(o.ssh_agent_path == "/opt/hvd/bin/hvd-agent");
  CHECK(o.secret_file.empty());  // the environment's secret file is not used
  g_env.clear();

  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--ssh-port", "0"}), Catch::Contains("--ssh-port"));
  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--ssh-port", "x"}), Catch::Contains("'x'"));
  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--ssh-command", " "}),
             Catch::Contains("--ssh-command"));
  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--ssh-agent-path", "a b"}),
             Catch::Contains("--ssh-agent-path"));
  for (const char* flag : {"--ssh-port", "--ssh-command", "--ssh-agent-path"}) {
    CHECK_THAT(parse_error({"-np", "1", flag, "22"}), Catch::Contains(flag) &&
                                                          Catch::Contains("needs --ssh"));
  }
  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--secret-file", "/s"}),
             Catch::Contains("--secret-file"));
  CHECK_THAT(parse_error({"-np", "1", "--ssh", "--tls-cert", "c", "--tls-key", "k", "--tls-ca",
                          "a"}),
             Catch::Contains("--tls"));
}

// Run as horovodrun: Horovod's launcher (cli.h, Personality).
TEST_CASE("cli: horovodrun implies --horovod-compat and --ssh unless given agents' credentials",
          "[cli]") {
  auto as_horovodrun = [](std::vector<std::string> args) {
    args.push_back("prog");
    CliOutcome outcome = parse_command_line(args, fake_getenv, Personality::kHorovodrun);
    if (auto* e = std::get_if<CliExit>(&outcome)) FAIL("unexpected exit: " << e->err);
    return std::get<LaunchOptions>(std::move(outcome));
  };
  g_env.clear();
  auto o = as_horovodrun({"-np", "2", "-H", "a:1,b:1", "-p", "2222"});  // a copied Horovod line
  CHECK(o.horovod_compat);
  REQUIRE(o.extra_env.size() == 1);  // the shim first on PYTHONPATH, as --horovod-compat does
  CHECK(o.extra_env[0].first == "PYTHONPATH");
  CHECK(o.ssh);
  CHECK(o.ssh_port == 2222);
  CHECK(o.secret_file.empty());
  CHECK(as_horovodrun({"-np", "2"}).ssh);  // a local job: nothing to ssh to, -p would be noted

  // Credentials for the hvd-agent daemons: those, not ssh.
  CHECK_FALSE(as_horovodrun({"-np", "2", "--secret-file", "/s"}).ssh);
  CHECK_FALSE(as_horovodrun({"-np", "2", "--agent-port", "4000"}).ssh);
  g_env["HVD_SECRET_FILE"] = "/from/env";
  auto daemons = as_horovodrun({"-np", "2"});
  CHECK_FALSE(daemons.ssh);
  CHECK(daemons.secret_file == "/from/env");
  g_env.clear();

  // As hvdrun, -p needs --ssh.
  CHECK_FALSE(parse_ok({"-np", "2"}).horovod_compat);
  CHECK_THAT(parse_error({"-np", "2", "-p", "2222"}),
             Catch::Contains("-p/--ssh-port needs --ssh (implied as horovodrun)"));
}
