// What the command lines of hvdrun (launcher/cli.cc) and hvd-agent
// (daemon/agent/agent_cli.cc) share that needs no CLI11: how a parse that
// ends the program ends (--help, --version, a usage error), usage errors on
// one line, the TCP port syntax and hvd's agent port. The option groups both
// programs have are in common/cli_options.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace hvd::common {

// hvd's documented agent port (hvd-agent --listen, hvdrun --agent-port).
inline constexpr int kAgentPort = 29470;

// --help, --version or an error: what to print and the exit code.
struct CliExit {
  int code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr: one "PROGRAM: error: ..." line
};

// getenv-like lookup, so tests can supply the environment.
using EnvLookup = std::function<const char*(const char*)>;

// CLI11 messages may span lines; the user gets exactly one.
std::string one_line(std::string_view text);

// "PROGRAM: error: MESSAGE" on one line, for stderr, with exit code `code`.
CliExit usage_error(std::string_view program, int code, std::string_view message);

// Decimal digits only (no sign, no blanks) that fit an int; nothing otherwise.
std::optional<int> parse_decimal(std::string_view text);

// A TCP port: decimal digits only, from `lowest` (0: a listener's "any free
// port") to 65535; nothing otherwise.
std::optional<int> parse_port(std::string_view text, int lowest = 1);

}  // namespace hvd::common
