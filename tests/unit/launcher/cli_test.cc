#include "launcher/cli.h"
#include "tests/unit/support/temp_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace hvd::launcher;

namespace {

std::map<std::string, std::string> g_env;

const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

LaunchOptions parse_ok(const std::vector<std::string>& args) {
  CliOutcome outcome = parse_command_line(args, fake_getenv);
  if (auto* e = std::get_if<CliExit>(&outcome))
    FAIL("unexpected exit " << e->code << ": " << e->err);
  return std::get<LaunchOptions>(std::move(outcome));
}

// The single error line of a refused command line.
std::string parse_error(const std::vector<std::string>& args) {
  CliOutcome outcome = parse_command_line(args, fake_getenv);
  auto* e = std::get_if<CliExit>(&outcome);
  REQUIRE(e != nullptr);
  CHECK(e->code == 2);
  CHECK(e->out.empty());
  CHECK_THAT(e->err, Catch::StartsWith("hvdrun: error: "));
  REQUIRE(!e->err.empty());
  CHECK(e->err.back() == '\n');
  CHECK(e->err.find('\n') == e->err.size() - 1);
  return e->err;
}

}  // namespace

TEST_CASE("the command and its own flags are not parsed") {
  g_env.clear();
  auto o = parse_ok({"-np", "2", "sh", "-c", "echo $HVD_RANK", "--verbose", "-x", "A=1"});
  CHECK(o.np == 2);
  CHECK(o.command ==
        std::vector<std::string>{"sh", "-c", "echo $HVD_RANK", "--verbose", "-x", "A=1"});
  CHECK_FALSE(o.verbose);
  CHECK(o.extra_env.empty());
  CHECK(o.hosts == std::vector<HostSlots>{{"localhost", 2}});

  auto dashdash = parse_ok({"--np", "1", "--", "-weird-program", "--np", "5"});
  CHECK(dashdash.np == 1);
  CHECK(dashdash.command == std::vector<std::string>{"-weird-program", "--np", "5"});

  auto horovod = parse_ok({"-np=2", "-np", "4", "--verbose", "--verbose", "prog"});
  CHECK(horovod.np == 4);  // the last value wins
  CHECK(horovod.verbose);

  auto eq = parse_ok({"--np=3", "--verbose", "python3", "train.py"});
  CHECK(eq.np == 3);
  CHECK(eq.verbose);
  CHECK(eq.command == std::vector<std::string>{"python3", "train.py"});
}

TEST_CASE("hosts from -H or a hostfile and the default number of processes") {
  g_env.clear();
  auto h = parse_ok({"-np", "3", "-H", "a:2, b:2", "prog"});
  CHECK(h.hosts == std::vector<HostSlots>{{"a", 2}, {"b", 2}});
  CHECK(h.np == 3);

  auto all = parse_ok({"--hosts", "a:2,b:1", "prog"});
  CHECK(all.np == 3);

  std::string hostfile = hvd::test::write_temp_file("# hosts\nlocalhost slots=2\n127.0.0.1 slots=2\n");
  auto f = parse_ok({"--hostfile", hostfile, "-np", "4", "prog"});
  CHECK(f.hosts == std::vector<HostSlots>{{"localhost", 2}, {"127.0.0.1", 2}});
  std::remove(hostfile.c_str());
}

TEST_CASE("env passing with NAME=VALUE and NAME alone") {
  g_env = {{"FROM_LAUNCHER", "here"}};
  auto o = parse_ok({"-np", "1", "-x", "A=1", "--env", "B=x=y", "-x", "FROM_LAUNCHER", "-x",
                     "C=", "-x", "UNSET_ONE", "prog"});
  using P = std::pair<std::string, std::string>;
  CHECK(o.extra_env ==
        std::vector<P>{{"A", "1"}, {"B", "x=y"}, {"FROM_LAUNCHER", "here"}, {"C", ""}});
  REQUIRE(o.warnings.size() == 1);
  CHECK_THAT(o.warnings[0], Catch::Contains("UNSET_ONE"));
  CHECK_THAT(parse_error({"-np", "1", "-x", "1BAD=2", "prog"}), Catch::Contains("'1BAD'"));
  CHECK_THAT(parse_error({"-np", "1", "-x", "=2", "prog"}), Catch::Contains("'=2'"));
}

TEST_CASE("tunables: flags from the settings table layered over env and config file") {
  g_env.clear();
  auto defaults = parse_ok({"-np", "1", "prog"});
  CHECK(defaults.settings.get("start_timeout") == "30");
  CHECK(defaults.settings.get("log_level") == "warning");

  std::string config = hvd::test::write_temp_file("start_timeout: 40\nterminate_grace: 9\nlog_level: info\n");
  g_env = {{"HVD_START_TIMEOUT", "50"}};
  auto o = parse_ok({"-np", "1", "--config-file", config, "--log-level", "debug", "--cpu-transport",
                     "gloo", "prog"});
  CHECK(o.settings.get("start_timeout") == "50");   // env over config file
  CHECK(o.settings.get("terminate_grace") == "9");  // config file over default
  CHECK(o.settings.get("log_level") == "debug");    // flag over config file

  auto flag = parse_ok({"-np", "1", "--config-file", config, "--start-timeout", "5", "prog"});
  CHECK(flag.settings.get("start_timeout") == "5");  // flag over env
  CHECK(flag.settings.to_environment().at("HVD_START_TIMEOUT") == "5");
  std::remove(config.c_str());
  g_env.clear();
}

TEST_CASE("bad tunable values name the flag and the value") {
  g_env.clear();
  std::string e = parse_error({"-np", "1", "--start-timeout", "soon", "prog"});
  CHECK_THAT(e, Catch::Contains("--start-timeout") && Catch::Contains("'soon'"));
  CHECK_THAT(parse_error({"-np", "1", "--log-level", "loud", "prog"}), Catch::Contains("'loud'"));
  g_env = {{"HVD_TERMINATE_GRACE_SECONDS", "-3"}};
  CHECK_THAT(parse_error({"-np", "1", "prog"}),
             Catch::Contains("HVD_TERMINATE_GRACE_SECONDS") && Catch::Contains("'-3'"));
  g_env.clear();
  std::string config = hvd::test::write_temp_file("no_such_key: 1\n");
  CHECK_THAT(parse_error({"-np", "1", "--config-file", config, "prog"}),
             Catch::Contains("no_such_key"));
  std::remove(config.c_str());
  CHECK_THAT(parse_error({"-np", "1", "--config-file", "/nonexistent/hvd.yaml", "prog"}),
             Catch::Contains("/nonexistent/hvd.yaml"));
}

TEST_CASE("usage errors: one line naming the bad token") {
  g_env.clear();
  CHECK_THAT(parse_error({"-np", "2"}), Catch::Contains("missing command"));
  CHECK_THAT(parse_error({}), Catch::Contains("missing command"));
  CHECK_THAT(parse_error({"-np", "0", "prog"}), Catch::Contains("-np 0"));
  CHECK_THAT(parse_error({"-np", "two", "prog"}), Catch::Contains("two"));
  CHECK_THAT(parse_error({"--bogus", "-np", "1", "prog"}), Catch::Contains("--bogus"));
  CHECK_THAT(parse_error({"-np", "1", "--bogus=3", "prog"}), Catch::Contains("--bogus"));
  CHECK_THAT(parse_error({"-np", "1", "-H", "host:x", "prog"}),
             Catch::Contains("-H") && Catch::Contains("'x'"));
  CHECK_THAT(parse_error({"-np", "1", "-H", "", "prog"}), Catch::Contains("empty host list"));
  CHECK_THAT(parse_error({"-np", "1", "-H", "a,a", "prog"}), Catch::Contains("'a'"));
  CHECK_THAT(parse_error({"-np", "1", "-H", "a:1", "--hostfile", "f", "prog"}),
             Catch::Contains("--hostfile"));
  CHECK_THAT(parse_error({"prog"}), Catch::Contains("-np"));
  std::string hostfile = hvd::test::write_temp_file("a slots=1\nb slots=zero\n");
  CHECK_THAT(parse_error({"--hostfile", hostfile, "prog"}),
             Catch::Contains(hostfile + ":2:") && Catch::Contains("'zero'"));
  std::remove(hostfile.c_str());
}

TEST_CASE("help and version exit 0 with their text on stdout") {
  g_env.clear();
  for (const char* flag : {"--help", "-h"}) {
    CliOutcome outcome = parse_command_line({flag}, fake_getenv);
    auto* e = std::get_if<CliExit>(&outcome);
    REQUIRE(e != nullptr);
    CHECK(e->code == 0);
    CHECK(e->err.empty());
    CHECK_THAT(e->out, Catch::Contains("--hostfile") && Catch::Contains("--start-timeout") &&
                           Catch::Contains("--terminate-grace") && Catch::Contains("COMMAND"));
  }
  CliOutcome outcome = parse_command_line({"--version"}, fake_getenv);
  auto* e = std::get_if<CliExit>(&outcome);
  REQUIRE(e != nullptr);
  CHECK(e->code == 0);
  CHECK_THAT(e->out, Catch::StartsWith("hvdrun (hvd) "));
}

TEST_CASE("cli: --blacklist-cooldown-range takes two values before the command") {
  g_env.clear();
  LaunchOptions o = parse_ok({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "1",
                              "2", "sh", "-c", "true"});
  CHECK(o.elastic.cooldown_low == 1);
  CHECK(o.elastic.cooldown_high == 2);
  CHECK(o.command == std::vector<std::string>{"sh", "-c", "true"});
  CHECK(parse_error({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "5", "2",
                     "true"}) ==
        "hvdrun: error: --blacklist-cooldown-range 5 2: need 1 <= LO <= HI (seconds)\n");
  CHECK(parse_error({"-np", "2", "--blacklist-cooldown-range", "1", "2", "true"}) ==
        "hvdrun: error: --blacklist-cooldown-range needs an elastic job (--min-np/--max-np)\n");
}

TEST_CASE("autotune: a bare --autotune flag, and Horovod's names for its settings") {
  g_env.clear();
  CHECK(parse_ok({"-np", "1", "prog"}).settings.get("autotune") == "false");
  auto o = parse_ok({"-np", "2", "--autotune", "--autotune-log-file", "/tmp/at.csv", "prog", "x"});
  CHECK(o.settings.get("autotune") == "true");
  CHECK(o.settings.get("autotune_log_file") == "/tmp/at.csv");
  CHECK(o.command == std::vector<std::string>{"prog", "x"});  // the flag took no value
  CHECK(o.settings.to_environment().at("HVD_AUTOTUNE") == "true");
  CHECK(parse_ok({"-np", "1", "--autotune=off", "prog"}).settings.get("autotune") == "false");
  g_env = {{"HOROVOD_AUTOTUNE", "1"},
           {"HOROVOD_AUTOTUNE_LOG", "/tmp/h.csv"},
           {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "1"},
           {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "4"},
           {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "30"}};
  auto h = parse_ok({"-np", "1", "prog"});
  CHECK(h.settings.get_bool("autotune"));
  CHECK(h.settings.get("autotune_log_file") == "/tmp/h.csv");
  CHECK(h.settings.get_int("autotune_warmup_samples") == 1);
  CHECK(h.settings.get_int("autotune_steps_per_sample") == 4);
  CHECK(h.settings.get_int("autotune_max_samples") == 30);
  g_env.clear();
}

TEST_CASE("autotune: bad values name the token") {
  g_env.clear();
  CHECK_THAT(parse_error({"-np", "1", "--autotune=maybe", "prog"}),
             Catch::Contains("--autotune") && Catch::Contains("'maybe'"));
  CHECK_THAT(parse_error({"-np", "1", "--autotune-steps-per-sample", "0", "prog"}),
             Catch::Contains("--autotune-steps-per-sample") && Catch::Contains("'0'"));
  CHECK_THAT(parse_error({"-np", "1", "--autotune-max-samples", "many", "prog"}),
             Catch::Contains("'many'"));
  g_env = {{"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "-1"}};
  CHECK_THAT(parse_error({"-np", "1", "prog"}),
             Catch::Contains("HOROVOD_AUTOTUNE_WARMUP_SAMPLES") && Catch::Contains("'-1'"));
  g_env.clear();
}

TEST_CASE("horovodrun's flags: the same meaning, ignored with a note, or refused with the reason") {
  g_env.clear();
  // Aliases of hvdrun's own flags and horovodrun's multi-letter short names.
  std::string hostfile = hvd::test::write_temp_file("localhost slots=2\n");
  auto o = parse_ok({"-np", "2", "--min-num-proc", "1", "--max-num-proc", "4", "--slots", "2",
                     "-hostfile", hostfile, "--ssh", "-p", "2222", "--network-interfaces", "lo",
                     "--autotune-bayes-opt-max-samples", "7", "prog"});
  std::remove(hostfile.c_str());
  CHECK(o.np == 2);
  REQUIRE(o.hosts.size() == 1);
  CHECK(o.hosts[0].slots == 2);
  CHECK(o.ssh_port == 2222);
  CHECK(o.network_interfaces == std::vector<std::string>{"lo"});
  CHECK(o.settings.get("autotune_max_samples") == "7");
  // Settings under horovodrun's names and units.
  o = parse_ok({"-np", "1", "--fusion-threshold-mb", "32", "--gloo-timeout-seconds", "45",
                "--no-stall-check", "--no-hierarchical-allreduce", "prog"});
  CHECK(o.settings.get_int("fusion_threshold") == (int64_t{32} << 20));
  CHECK(o.settings.get("transport_timeout") == "45");
  CHECK(o.settings.get("stall_check_warning_time_seconds") == "0");
  CHECK(o.settings.get("stall_check_shutdown_time_seconds") == "0");
  CHECK(o.settings.get("hierarchical_allreduce") == "false");
  CHECK(o.warnings.empty());
  // hvdrun's own flag wins over horovodrun's spelling of the same setting.
  o = parse_ok({"-np", "1", "--fusion-threshold-mb", "32", "--fusion-threshold", "1024", "prog"});
  CHECK(o.settings.get_int("fusion_threshold") == 1024);
  // Ignored where it cannot matter: one note each.
  o = parse_ok({"-np", "1", "--gloo", "--disable-cache", "--num-nccl-streams", "2", "prog"});
  CHECK(o.warnings == std::vector<std::string>{
                          "--gloo: ignored: hvd always runs without MPI (gloo, shm and NCCL)",
                          "--disable-cache: ignored: hvd keeps no cache of host checks between runs",
                          "--num-nccl-streams: ignored: hvd runs NCCL on one communication stream "
                          "per device"});
  // Refused, saying why.
  CHECK(parse_error({"-np", "1", "--mpi", "prog"}) ==
        "hvdrun: error: --mpi is a horovodrun flag hvdrun refuses: hvd runs without MPI: drop it "
        "(collectives run on gloo, shm and NCCL)\n");
  CHECK_THAT(parse_error({"-np", "1", "--jsrun", "prog"}), Catch::Contains("without MPI or jsrun"));
  CHECK_THAT(parse_error({"-np", "1", "--mpi-args", "--bind-to none", "prog"}),
             Catch::Contains("--mpi-args is a horovodrun flag hvdrun refuses"));
  CHECK_THAT(parse_error({"-np", "1", "--ssh-identity-file", "k", "prog"}),
             Catch::Contains("--ssh-command 'ssh -i FILE'"));
  CHECK_THAT(parse_error({"-np", "1", "-i", "k", "prog"}),
             Catch::StartsWith("hvdrun: error: --ssh-identity-file is a horovodrun flag"));
  CHECK(parse_error({"-np", "1", "--fusion-threshold-mb", "x", "prog"}) ==
        "hvdrun: error: --fusion-threshold-mb 'x': not a number of MiB (0 or more)\n");
  // -cb is --check-build.
  CliOutcome cb = parse_command_line({"-cb"}, fake_getenv);
  REQUIRE(std::holds_alternative<CliExit>(cb));
  CHECK_THAT(std::get<CliExit>(cb).out, Catch::Contains("Available transports"));
}

// Issue 21: sizes no job can have are refused while parsing, before any
// per-rank data exists (-np 1000000 used to grow hvdrun to 22 GB).
TEST_CASE("job sizes beyond the limits are refused at once, naming the limit") {
  g_env.clear();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(parse_error({"-np", "1000000", "prog"}),
             Catch::Contains("-np 1000000") && Catch::Contains("65536"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // One host (the implied localhost) runs at most 4096 workers.
  CHECK_THAT(parse_error({"-np", "5000", "prog"}),
             Catch::Contains("-np 5000") && Catch::Contains("4096") && Catch::Contains("-H"));
  CHECK(parse_ok({"-np", "4096", "prog"}).np == 4096);
  // Huge slot counts and --max-np.
  CHECK_THAT(parse_error({"-H", "a:2147483647", "prog"}),
             Catch::Contains("'2147483647'") && Catch::Contains("4096"));
  CHECK_THAT(parse_error({"-np", "2", "--max-np", "1000000", "-H", "a:2", "prog"}),
             Catch::Contains("--max-np 1000000") && Catch::Contains("65536"));
  // Every slot of many hosts, no -np: more than a job may have.
  std::string many;
  for (int i = 0; i < 17; ++i) many += (many.empty() ? "" : ",") + std::string("h") +
                                       std::to_string(i) + ":4096";
  CHECK_THAT(parse_error({"-H", many, "prog"}), Catch::Contains("65536"));
}

// Issue 21: --cpu-transport foo was accepted and every worker then failed in
// hvd_init(); settings with a closed set of values are checked by hvdrun.
TEST_CASE("transport settings are checked against the transports hvd knows") {
  g_env.clear();
  std::string cpu = parse_error({"-np", "1", "--cpu-transport", "foo", "prog"});
  CHECK_THAT(cpu, Catch::Contains("--cpu-transport") && Catch::Contains("'foo'") &&
                      Catch::Contains("gloo") && Catch::Contains("shm"));
  CHECK_THAT(parse_error({"-np", "1", "--gpu-transport", "shm", "prog"}),
             Catch::Contains("--gpu-transport") && Catch::Contains("'shm'"));
  CHECK_THAT(parse_error({"-np", "1", "--gpu-staging-plugin", "gloo", "prog"}),
             Catch::Contains("--gpu-staging-plugin") && Catch::Contains("'gloo'"));
  g_env = {{"HVD_CPU_TRANSPORT", "tcp"}};
  CHECK_THAT(parse_error({"-np", "1", "prog"}),
             Catch::Contains("HVD_CPU_TRANSPORT") && Catch::Contains("'tcp'"));
  g_env.clear();
  std::string config = hvd::test::write_temp_file("gpu_transport: bogus\n");
  CHECK_THAT(parse_error({"-np", "1", "--config-file", config, "prog"}),
             Catch::Contains(config) && Catch::Contains("'bogus'"));
  std::remove(config.c_str());
  // The known names pass, and so does a plugin that transport_plugins declares.
  for (const char* name : {"auto", "gloo", "shm", "hierarchical"}) {
    CHECK(parse_ok({"-np", "1", "--cpu-transport", name, "prog"}).settings.get("cpu_transport") ==
          name);
  }
  for (const char* name : {"auto", "gloo", "nccl"}) {
    CHECK(parse_ok({"-np", "1", "--gpu-transport", name, "prog"}).settings.get("gpu_transport") ==
          name);
  }
  CHECK(parse_ok({"-np", "1", "--transport-plugins", "mytcp:cpu:libmytcp.so", "--cpu-transport",
                  "mytcp", "prog"})
            .settings.get("cpu_transport") == "mytcp");
  CHECK_THAT(parse_error({"-np", "1", "--transport-plugins", "mycuda:cuda:libmycuda.so",
                          "--cpu-transport", "mycuda", "prog"}),
             Catch::Contains("'mycuda'"));
  // A -x of a setting's variable is what the workers read: checked as well.
  CHECK_THAT(parse_error({"-np", "1", "-x", "HVD_CPU_TRANSPORT=foo", "prog"}),
             Catch::Contains("-x HVD_CPU_TRANSPORT") && Catch::Contains("'foo'"));
  CHECK_THAT(parse_error({"-np", "1", "-x", "HOROVOD_START_TIMEOUT=soon", "prog"}),
             Catch::Contains("-x HOROVOD_START_TIMEOUT") && Catch::Contains("'soon'"));
  CHECK(parse_ok({"-np", "1", "-x", "HVD_CPU_TRANSPORT=shm", "prog"}).extra_env.size() == 1);
}
