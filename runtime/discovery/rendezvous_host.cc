#include "runtime/discovery/rendezvous_host.h"

#include <thread>

#include "common/logging.h"
#include "runtime/discovery/launcher_env.h"

namespace hvd::runtime {

namespace {

constexpr std::chrono::milliseconds kPollInterval{20};
constexpr std::chrono::milliseconds kCloseGrace{1000};

}  // namespace

common::Result<std::unique_ptr<RendezvousHost>> RendezvousHost::start(
    const std::string& bind_address, int port, const std::string& token, int size) {
  std::unique_ptr<RendezvousHost> host(new RendezvousHost(token, size));
  auto server = daemon::GrpcServer::start(bind_address, port, {&host->service_},
                                          daemon::rendezvous_server_options());
  if (!server.is_ok()) {
    return common::unavailable(
        "rank 0 cannot host the job's rendezvous on port " + std::to_string(port) +
        " (" + server.status().message() + "): another program probably holds it; set " +
        kRendezvousPortVar + " to a free port, the same for every rank");
  }
  host->server_ = std::move(server).value();
  spdlog::debug("hosting the rendezvous of {} ranks on {}", size, host->server_->address());
  return host;
}

RendezvousHost::~RendezvousHost() { close(); }

void RendezvousHost::finish(std::chrono::milliseconds wait) {
  daemon::KvStore& store = service_.store();
  auto count = store.add(kFinishedKey, 1);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (count.is_ok() && count.value() < size_ &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPollInterval);
    count = store.add(kFinishedKey, 0);
  }
  if (count.is_ok() && count.value() < size_) {
    spdlog::warn("closing the job's rendezvous: {} of {} ranks had not shut down within {:.1f} s",
                 size_ - count.value(), size_, std::chrono::duration<double>(wait).count());
  }
  close();
}

void RendezvousHost::close() {
  service_.close();
  if (server_) server_->shutdown(kCloseGrace);
}

}  // namespace hvd::runtime
