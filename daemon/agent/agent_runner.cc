#include "daemon/agent/agent_runner.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "common/http_server.h"
#include "common/input_file.h"
#include "common/prometheus_text.h"
#include "common/secret_file.h"
#include "daemon/agent/agent_service.h"
#include "daemon/agent/containment.h"
#include "proto/grpc_server.h"
#include "daemon/agent/listen_probe.h"

namespace hvd::daemon {

namespace {

constexpr std::chrono::milliseconds kServerShutdownGrace{2'000};
constexpr std::chrono::milliseconds kSecretLineTimeout{10'000};
// HTTP/2 keepalive of the agent's connections: a launcher cut off without
// its connection closing (network partition, host gone) ends its Watch
// within about kKeepaliveMs + kKeepaliveTimeoutMs, so that a job's orphan
// grace (as short as its heartbeat timeout) counts from about the cut.
constexpr int kKeepaliveMs = 1'000;
constexpr int kKeepaliveTimeoutMs = 2'000;

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

// The first line of stdin, read a byte at a time so that nothing after it
// is consumed (the EOF watcher reads the rest), within kSecretLineTimeout:
// hvdrun --ssh writes it as soon as ssh starts. A stop signal ends the wait.
common::Result<std::string> read_secret_line() {
  const std::string what = "the secret on stdin";
  auto line = common::read_line_within(STDIN_FILENO, what, kSecretLineTimeout,
                                       common::kMaxSecretBytes);
  if (!line.is_ok()) return line.status();
  return common::check_secret(std::move(line).value(), what);
}

common::Result<std::string> load_secret(const AgentConfig& config) {
  return config.secret_stdin ? read_secret_line() : common::read_secret_file(config.secret_file);
}

// --exit-on-stdin-eof: stdin's EOF (the launcher or its ssh is gone) stops
// the agent exactly like SIGTERM. Detached: it may still be blocked in read
// when the agent exits.
void watch_stdin_eof() {
  std::thread([] {
    char buffer[256];
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof(buffer));
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      break;
    }
    // No logging here: the agent may be exiting already.
    ::kill(::getpid(), SIGTERM);
  }).detach();
}

}  // namespace

int run_agent(const AgentConfig& config, const std::function<int()>& wait_for_stop,
              const std::function<void(const std::string&)>& on_listening) {
  auto secret = load_secret(config);
  if (!secret.is_ok()) return fail(agent_exit::kUsage, secret.status().message());
  auto credentials = proto::server_credentials(config.tls);
  if (!credentials.is_ok()) return fail(agent_exit::kUsage, credentials.status().message());

  // cgroup or subreaper (containment.h); a required cgroup that cannot be
  // made is refused like an unusable file.
  auto containment = configure_containment(config.containment, config.containment_source);
  if (!containment.is_ok()) return fail(agent_exit::kUsage, containment.status().message());

  // gRPC only says that it could not listen; the probe says why.
  if (auto probe = probe_listen(config.listen); !probe.is_ok()) {
    return fail(agent_exit::kFailure, probe.message());
  }

  AgentOptions options;
  options.secret = std::move(secret).value();
  options.slots = config.slots;
  options.orphan_grace = config.orphan_grace;
  AgentService service(std::move(options));

  ServerOptions server_options = agent_server_options();
  server_options.credentials = std::move(credentials).value();
  // max_receive_bytes: the largest request of the service's methods.
  server_options.keepalive_ms = kKeepaliveMs;
  server_options.keepalive_timeout_ms = kKeepaliveTimeoutMs;
  auto server = GrpcServer::start(config.listen.host, config.listen.port, {&service},
                                  server_options);
  if (!server.is_ok()) {
    service.shutdown(std::chrono::milliseconds(0));
    return fail(agent_exit::kFailure, server.status().message());
  }
  const std::string address = (*server)->address();
  spdlog::info("slots={} tls={} orphan_grace={:g}s max_receive_bytes={}", config.slots,
               config.tls.enabled() ? "mutual" : "off",
               static_cast<double>(config.orphan_grace.count()) / 1000.0,
               service.call_gate().max_request_bytes());
  spdlog::info("containment: {}", containment->describe());
  // The ready line: scripts and tests wait for it (and read the port from it).
  if (config.exit_on_stdin_eof && !spdlog::should_log(spdlog::level::info)) {
    // Job-scoped (hvdrun --ssh): the launcher reads the port from this line.
    std::fprintf(stderr, "hvd-agent: listening on %s\n", address.c_str());
    std::fflush(stderr);
  } else {
    spdlog::info("listening on {}", address);
  }
  std::unique_ptr<common::HttpServer> metrics;
  if (config.metrics_port > 0) {
    auto started = common::HttpServer::start(
        config.metrics_address, config.metrics_port, [&service](const common::HttpRequest& r) {
          if (r.path != "/metrics") {
            return common::HttpResponse{404, "text/plain; charset=utf-8", "try /metrics\n"};
          }
          return common::HttpResponse{200, std::string(common::kPrometheusContentType),
                                      service.metrics().render()};
        });
    if (!started.is_ok()) {
      (*server)->shutdown(std::chrono::milliseconds(0));
      service.shutdown(std::chrono::milliseconds(0));
      return fail(agent_exit::kUsage, "--metrics-port: " + started.status().message());
    }
    metrics = std::move(started).value();
    spdlog::info("metrics at http://{}:{}/metrics", config.metrics_address, metrics->port());
  }
  if (on_listening) on_listening(address);
  if (config.exit_on_stdin_eof) watch_stdin_eof();

  const int signo = wait_for_stop();
  spdlog::info("{} received: terminating every job's workers, then exiting",
               signal_text(signo));
  // Workers first: their Watch streams end with the service's shutdown, so
  // the server's shutdown does not wait for them.
  if (metrics) metrics->stop();
  service.shutdown(kAgentShutdownGrace);
  (*server)->shutdown(kServerShutdownGrace);
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  return agent_exit::kOk;
}

}  // namespace hvd::daemon
