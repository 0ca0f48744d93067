// The option groups that the command lines of hvdrun (launcher/cli.cc) and
// hvd-agent (daemon/agent/agent_cli.cc) share, and how both parse: CLI11,
// a repeated scalar option taking its last value, --help/--version/usage
// errors as a CliExit (common/cli_values.h). Inline, because hvd_common
// does not link CLI11: only those two parsers (whose libraries do) include
// this header.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli_values.h"
#include "common/status.h"

namespace hvd::common {

// Parses `args` (the program name excluded) into `app`, whose options are
// all added: nothing when they are fine, else what to print — CLI11's
// --help or --version text, or the usage error of `program` (exit code
// `usage_code`): CLI11's message on one line, then what `more` adds (e.g.
// "did you mean").
inline std::optional<CliExit> parse_options(
    CLI::App& app, const std::vector<std::string>& args, std::string_view program,
    int usage_code, const std::function<std::string()>& more = {}) {
  // A repeated scalar option takes its last value, as in most launchers.
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
    return CliExit{code, out.str(), err.str()};
  } catch (const CLI::ParseError& e) {
    return usage_error(program, usage_code, e.what() + (more ? more() : std::string()));
  }
  return std::nullopt;
}

// The agents' shared secret (docs/security.md): --secret-file FILE, else
// $HVD_SECRET_FILE; hvd-agent also has --secret-stdin (the first line of
// stdin; hvdrun --ssh), which excludes --secret-file.
struct SecretOptions {
  std::string file;
  bool from_stdin = false;
  CLI::Option* file_opt = nullptr;

  // Adds --secret-file (`file_help`) and, when `stdin_help` is not empty,
  // --secret-stdin.
  void add_to(CLI::App& app, const std::string& file_help, const std::string& stdin_help = "") {
    file_opt = app.add_option("--secret-file", file, file_help)->type_name("FILE");
    if (!stdin_help.empty()) {
      app.add_flag("--secret-stdin", from_stdin, stdin_help)->excludes(file_opt);
    }
  }

  bool file_given() const { return file_opt != nullptr && file_opt->count() > 0; }

  // The secret file: --secret-file, else $HVD_SECRET_FILE when it is set and
  // not empty; empty when neither is, or with --secret-stdin.
  // kInvalidArgument for --secret-file with an empty name.
  Result<std::string> file_name(const EnvLookup& lookup) const {
    if (from_stdin) return std::string();  // HVD_SECRET_FILE is not consulted
    if (file_given()) {
      if (file.empty()) return invalid_argument("--secret-file '': expected a file name");
      return file;
    }
    const char* env = lookup ? lookup("HVD_SECRET_FILE") : nullptr;
    return std::string(env != nullptr ? env : "");
  }
};

// --tls-cert, --tls-key, --tls-ca (mutual TLS; proto::check_tls_files
// checks that all three or none are given). `cert_help` and `ca_help` say
// whose certificate it is.
inline void add_tls_options(CLI::App& app, std::string& cert, std::string& key, std::string& ca,
                            const std::string& cert_help, const std::string& ca_help) {
  app.add_option("--tls-cert", cert, cert_help)->type_name("FILE");
  app.add_option("--tls-key", key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--tls-ca", ca, ca_help)->type_name("FILE");
}

}  // namespace hvd::common
