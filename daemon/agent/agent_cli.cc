#include "daemon/agent/agent_cli.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "common/cli_options.h"
#include "common/logging.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif

namespace hvd::daemon {

namespace {

constexpr int kMaxSlots = 1 << 20;
constexpr double kMaxOrphanGraceSeconds = 365.0 * 24 * 3600;

AgentCliExit usage_error(std::string_view message) {
  return common::usage_error("hvd-agent", agent_exit::kUsage, message);
}

// A host name or IPv4 literal: letters, digits, '-', '.', '_'.
bool plain_host(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_';
  });
}

common::Status bad_listen(std::string_view text, std::string_view why) {
  return common::invalid_argument("--listen '" + std::string(text) + "': " + std::string(why));
}

common::Result<std::chrono::milliseconds> parse_orphan_grace(const std::string& text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || value < 0 || value > kMaxOrphanGraceSeconds) {
    return common::invalid_argument("--orphan-grace '" + text +
                                    "': expected a number of seconds from 0 to 31536000");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(value * 1000.0)));
}

}  // namespace

common::Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad_listen(text, "expected [IPv6]:PORT (e.g. [::]:29470)");
    }
    out.host = std::string(text.substr(1, close - 1));
    in6_addr v6{};
    if (::inet_pton(AF_INET6, out.host.c_str(), &v6) != 1) {
      return bad_listen(text, "'" + out.host + "' is not an IPv6 address");
    }
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return bad_listen(text, "expected ADDR:PORT (e.g. 0.0.0.0:29470 or [::]:29470)");
    }
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return bad_listen(text, "an IPv6 address needs brackets: [ADDR]:PORT");
    }
    if (!plain_host(out.host)) {
      return bad_listen(text, "'" + out.host + "' is not an address or host name");
    }
  }
  auto number = common::parse_port(port, /*lowest=*/0);
  if (!number) {
    return bad_listen(text, "port '" + std::string(port) + "' is not a number from 0 to 65535");
  }
  out.port = *number;
  return out;
}

std::string to_string(const ListenAddress& address) {
  if (address.host.find(':') != std::string::npos) {
    return "[" + address.host + "]:" + std::to_string(address.port);
  }
  return address.host + ":" + std::to_string(address.port);
}

AgentCliOutcome parse_agent_command_line(const std::vector<std::string>& args,
                                         const AgentEnvLookup& lookup, int default_slots) {
  CLI::App app{
      "hvd-agent: starts and supervises the workers of hvd jobs on this host for hvdrun on "
      "other hosts. Every call must prove the shared secret; with --tls-* the connection is "
      "mutual TLS.",
      "hvd-agent"};
  app.footer(
      "Exit code: 0 after SIGTERM/SIGINT (every job's workers are terminated first), 1 cannot "
      "listen, 2 usage error. See docs/agent.md.");
  app.set_version_flag("--version", std::string("hvd-agent (hvd) ") + HVD_VERSION);

  std::string listen, slots, orphan_grace, log_level, containment, metrics_port;
  std::string metrics_address = "127.0.0.1";
  proto::TlsFiles tls;
  common::SecretOptions secret;
  bool exit_on_stdin_eof = false;
  secret.add_to(app,
                "File (mode 0600 or 0400, >= 16 bytes) of the secret hvdrun must prove "
                "[env HVD_SECRET_FILE]",
                "Read the secret (>= 16 bytes) from the first line of stdin instead "
                "(hvdrun --ssh)");
  app.add_flag("--exit-on-stdin-eof", exit_on_stdin_eof,
               "Job-scoped: stop like on SIGTERM when stdin (after the secret line) "
               "reaches EOF; the ready line is always printed");
  app.add_option("--listen", listen, "Address and port to serve on (default 0.0.0.0:29470)")
      ->type_name("ADDR:PORT");
  app.add_option("--slots", slots,
                 "Slots reported to hvdrun (default: the GPUs, else the online CPUs)")
      ->type_name("N");
  common::add_tls_options(app, tls.cert, tls.key, tls.ca, "PEM certificate of this agent (TLS)",
                          "PEM CA bundle that client certificates must chain to");
  app.add_option("--orphan-grace", orphan_grace,
                 "Seconds a job may go without its launcher before its workers are "
                 "terminated; 0: never (default 30)")
      ->type_name("SECONDS");
  app.add_option("--containment", containment,
                 "How a job's processes are kept together: auto (a cgroup v2 per job where "
                 "one can be made, else a subreaper), cgroup (required) or subreaper "
                 "[env HVD_CONTAINMENT] (default auto)")
      ->type_name("MODE");
  app.add_option("--metrics-port", metrics_port,
                 "Serve Prometheus /metrics of the agent on this TCP port (default 0: off)")
      ->type_name("PORT");
  app.add_option("--metrics-address", metrics_address,
                 "Address the metrics port binds (default 127.0.0.1)")
      ->type_name("ADDR");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warning, error, fatal or off (default info)")
      ->type_name("LEVEL");
  if (auto done = common::parse_options(app, args, "hvd-agent", agent_exit::kUsage)) {
    return *std::move(done);
  }

  AgentConfig config;
  config.slots = default_slots;
  if (app.count("--listen") > 0) {
    auto address = parse_listen_address(listen);
    if (!address.is_ok()) return usage_error(address.status().message());
    config.listen = *address;
  }
  if (app.count("--slots") > 0) {
    auto number = common::parse_decimal(slots);
    if (!number || *number < 1 || *number > kMaxSlots) {
      return usage_error("--slots '" + slots + "': expected a whole number from 1 to " +
                         std::to_string(kMaxSlots));
    }
    config.slots = *number;
  }
  if (app.count("--orphan-grace") > 0) {
    auto grace = parse_orphan_grace(orphan_grace);
    if (!grace.is_ok()) return usage_error(grace.status().message());
    config.orphan_grace = *grace;
  }
  if (app.count("--metrics-port") > 0) {
    auto number = common::parse_decimal(metrics_port);
    if (!number || *number < 0 || *number > 65535) {
      return usage_error("--metrics-port '" + metrics_port +
                         "': expected a whole number from 0 to 65535");
    }
    config.metrics_port = static_cast<int>(*number);
  }
  config.metrics_address = metrics_address;
  if (app.count("--log-level") > 0) {
    auto level = common::parse_log_level(log_level);
    if (!level.is_ok()) return usage_error("--log-level: " + level.status().message());
    config.log_level = *level;
  }
  if (app.count("--containment") == 0) {
    const char* from_env = lookup(kContainmentEnv);
    if (from_env && *from_env) {
      containment = from_env;
      config.containment_source = std::string(kContainmentEnv) + "=";
    }
  }
  if (!containment.empty()) {
    auto mode = parse_containment_mode(containment);
    if (!mode.is_ok()) return usage_error(config.containment_source + mode.status().message());
    config.containment = *mode;
  }
  if (auto s = proto::check_tls_files(tls); !s.is_ok()) return usage_error(s.message());
  config.tls = tls;

  config.secret_stdin = secret.from_stdin;
  config.exit_on_stdin_eof = exit_on_stdin_eof;
  auto secret_file = secret.file_name(lookup);
  if (!secret_file.is_ok()) return usage_error(secret_file.status().message());
  config.secret_file = *secret_file;
  if (!secret.from_stdin && config.secret_file.empty()) {
    return usage_error(
        "--secret-file FILE or --secret-stdin is required (or HVD_SECRET_FILE): an agent "
        "without a secret would run any command for anyone");
  }
  return config;
}

}  // namespace hvd::daemon
