#include "daemon/agent_runner.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>

#include <cstdio>

#include "common/secret_file.h"
#include "daemon/agent_service.h"
#include "daemon/grpc_server.h"
#include "daemon/listen_probe.h"

namespace hvd::daemon {

namespace {

constexpr int kMaxReceiveBytes = 64 * 1024 * 1024;
constexpr std::chrono::milliseconds kServerShutdownGrace{2'000};

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "hvd-agent: error: %s\n", message.c_str());
  std::fflush(stderr);
  return code;
}

std::string signal_text(int signo) {
  if (signo <= 0) return "a stop request";
  const char* abbrev = ::sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

}  // namespace

int run_agent(const AgentConfig& config, const std::function<int()>& wait_for_stop,
              const std::function<void(const std::string&)>& on_listening) {
  auto secret = common::read_secret_file(config.secret_file);
  if (!secret.is_ok()) return fail(agent_exit::kUsage, secret.status().message());
  auto credentials = proto::server_credentials(config.tls);
  if (!credentials.is_ok()) return fail(agent_exit::kUsage, credentials.status().message());

  // gRPC only says that it could not listen; the probe says why.
  if (auto probe = probe_listen(config.listen); !probe.is_ok()) {
    return fail(agent_exit::kFailure, probe.message());
  }

  AgentOptions options;
  options.secret = std::move(secret).value();
  options.slots = config.slots;
  options.orphan_grace = config.orphan_grace;
  AgentService service(std::move(options));

  ServerOptions server_options;
  server_options.credentials = std::move(credentials).value();
  server_options.max_receive_bytes = kMaxReceiveBytes;
  auto server = GrpcServer::start(config.listen.host, config.listen.port, {&service},
                                  server_options);
  if (!server.is_ok()) {
    service.shutdown(std::chrono::milliseconds(0));
    return fail(agent_exit::kFailure, server.status().message());
  }
  const std::string address = (*server)->address();
  spdlog::info("slots={} tls={} orphan_grace={:g}s max_receive_bytes={}", config.slots,
               config.tls.enabled() ? "mutual" : "off",
               static_cast<double>(config.orphan_grace.count()) / 1000.0, kMaxReceiveBytes);
  // The ready line: scripts and tests wait for it (and read the port from it).
  spdlog::info("listening on {}", address);
  if (on_listening) on_listening(address);

  const int signo = wait_for_stop();
  spdlog::info("{} received: terminating every job's workers, then exiting",
               signal_text(signo));
  // Workers first: their Watch streams end with the service's shutdown, so
  // the server's shutdown does not wait for them.
  service.shutdown(kAgentShutdownGrace);
  (*server)->shutdown(kServerShutdownGrace);
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  return agent_exit::kOk;
}

}  // namespace hvd::daemon
