#include "daemon/agent_cli.h"

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "common/logging.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif

namespace hvd::daemon {

namespace {

constexpr int kMaxSlots = 1 << 20;
constexpr double kMaxOrphanGraceSeconds = 365.0 * 24 * 3600;

// CLI11 messages may span lines; the user gets exactly one.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

AgentCliExit usage_error(std::string_view message) {
  return {agent_exit::kUsage, "", "hvd-agent: error: " + one_line(message) + "\n"};
}

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool parse_int(std::string_view text, int& out) {
  if (!all_digits(text)) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
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
  if (!parse_int(port, out.port) || out.port > 65535) {
    return bad_listen(text, "port '" + std::string(port) + "' is not a number from 0 to 65535");
  }
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

  std::string secret_file, listen, slots, orphan_grace, log_level;
  proto::TlsFiles tls;
  bool secret_stdin = false, exit_on_stdin_eof = false;
  auto* secret_file_opt = app.add_option("--secret-file", secret_file,
                 "File (mode 0600 or 0400, >= 16 bytes) of the secret hvdrun must prove "
                 "[env HVD_SECRET_FILE]")
      ->type_name("FILE");
  app.add_flag("--secret-stdin", secret_stdin,
                "Read the secret (>= 16 bytes) from the first line of stdin instead "
                "(hvdrun --ssh)")
      ->excludes(secret_file_opt);
  app.add_flag("--exit-on-stdin-eof", exit_on_stdin_eof,
               "Job-scoped: stop like on SIGTERM when stdin (after the secret line) "
               "reaches EOF; the ready line is always printed");
  app.add_option("--listen", listen, "Address and port to serve on (default 0.0.0.0:29470)")
      ->type_name("ADDR:PORT");
  app.add_option("--slots", slots,
                 "Slots reported to hvdrun (default: the GPUs, else the online CPUs)")
      ->type_name("N");
  app.add_option("--tls-cert", tls.cert, "PEM certificate of this agent (TLS)")->type_name("FILE");
  app.add_option("--tls-key", tls.key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--tls-ca", tls.ca, "PEM CA bundle that client certificates must chain to")
      ->type_name("FILE");
  app.add_option("--orphan-grace", orphan_grace,
                 "Seconds a job may go without its launcher before its workers are "
                 "terminated; 0: never (default 30)")
      ->type_name("SECONDS");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warning, error, fatal or off (default info)")
      ->type_name("LEVEL");
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_items_expected_max() == 1) {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --version
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    return AgentCliExit{code, out.str(), err.str()};
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }

  AgentConfig config;
  config.slots = default_slots;
  if (app.count("--listen") > 0) {
    auto address = parse_listen_address(listen);
    if (!address.is_ok()) return usage_error(address.status().message());
    config.listen = *address;
  }
  if (app.count("--slots") > 0) {
    if (!parse_int(slots, config.slots) || config.slots < 1 || config.slots > kMaxSlots) {
      return usage_error("--slots '" + slots + "': expected a whole number from 1 to " +
                         std::to_string(kMaxSlots));
    }
  }
  if (app.count("--orphan-grace") > 0) {
    auto grace = parse_orphan_grace(orphan_grace);
    if (!grace.is_ok()) return usage_error(grace.status().message());
    config.orphan_grace = *grace;
  }
  if (app.count("--log-level") > 0) {
    auto level = common::parse_log_level(log_level);
    if (!level.is_ok()) return usage_error("--log-level: " + level.status().message());
    config.log_level = *level;
  }
  if (auto s = proto::check_tls_files(tls); !s.is_ok()) return usage_error(s.message());
  config.tls = tls;

  config.secret_stdin = secret_stdin;
  config.exit_on_stdin_eof = exit_on_stdin_eof;
  if (secret_stdin) {
    // The secret comes from stdin; HVD_SECRET_FILE is not consulted.
  } else if (app.count("--secret-file") > 0) {
    if (secret_file.empty()) return usage_error("--secret-file '': expected a file name");
    config.secret_file = secret_file;
  } else if (const char* env = lookup ? lookup("HVD_SECRET_FILE") : nullptr; env && *env) {
    config.secret_file = env;
  } else {
    return usage_error(
        "--secret-file FILE or --secret-stdin is required (or HVD_SECRET_FILE): an agent "
        "without a secret would run any command for anyone");
  }
  return config;
}

}  // namespace hvd::daemon
