#include "proto/grpc_log.h"

#include <grpc/support/log.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/printable.h"
#include "proto/refusal_log.h"

namespace hvd::proto {

namespace {

constexpr std::string_view kHandshakeFailed = "Handshake failed with fatal error ";

// What OpenSSL's reasons usually mean between hvdrun and its agents.
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kHints{{
    {"wrong version number", "the peer does not speak TLS: plaintext on one side?"},
    {"http request", "the peer speaks plaintext HTTP"},
    {"peer did not return a certificate", "a client without --tls-cert/--tls-key"},
    {"certificate verify failed",
     "the other side's certificate is not signed by --tls-ca, has expired or is not for this "
     "name"},
    {"unknown ca", "the other side does not trust this side's CA"},
    {"bad certificate", "the other side refused this side's certificate"},
    {"certificate expired", "the other side says this side's certificate has expired"},
}};

// OpenSSL's reason: the text after the last "::" or ":", without the final '.'.
std::string_view reason_of(std::string_view message) {
  std::string_view reason = message;
  if (const size_t at = reason.rfind("::"); at != std::string_view::npos) {
    reason.remove_prefix(at + 2);
  } else if (const size_t colon = reason.rfind(':'); colon != std::string_view::npos) {
    reason.remove_prefix(colon + 1);
  }
  while (!reason.empty() && (reason.back() == '.' || reason.back() == ' ')) reason.remove_suffix(1);
  while (!reason.empty() && reason.front() == ' ') reason.remove_prefix(1);
  return reason;
}

// Set once the process exits: gRPC's threads may still log while static
// objects (spdlog's registry) are destroyed; such lines go to stderr as is.
std::atomic<bool> exiting{false};

void on_grpc_log(gpr_log_func_args* args) {
  if (args == nullptr || args->message == nullptr) return;
  const std::string_view message(args->message);
  const std::string line = grpc_log_line(message);
  if (exiting.load()) {
    std::fprintf(stderr, "%s\n", line.c_str());
    return;
  }
  if (is_handshake_failure(message)) {
    static RefusalLog handshakes(std::chrono::seconds(10));
    if (auto shown = handshakes.admit(line, RefusalLog::Clock::now())) spdlog::warn("{}", *shown);
    return;
  }
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    spdlog::warn("{}", line);
  } else {
    spdlog::debug("{}", line);
  }
}

}  // namespace

bool is_handshake_failure(std::string_view message) {
  return message.substr(0, kHandshakeFailed.size()) == kHandshakeFailed;
}

std::string grpc_log_line(std::string_view message) {
  if (!is_handshake_failure(message)) return "gRPC: " + common::printable(message);
  const std::string_view reason = reason_of(message);
  std::string line = "TLS handshake failed: " + common::printable(reason);
  for (const auto& [text, hint] : kHints) {
    if (reason.find(text) != std::string_view::npos) {
      line.append(" (").append(hint).append(")");
      break;
    }
  }
  return line;
}

void route_grpc_log() {
  // atexit handlers run before the destructors of the statics constructed
  // before them (spdlog's registry, made by init_logging).
  static const bool once = [] {
    std::atexit([] { exiting.store(true); });
    return true;
  }();
  (void)once;
  gpr_set_log_function(&on_grpc_log);
}

}  // namespace hvd::proto
