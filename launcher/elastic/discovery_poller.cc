#include "launcher/elastic/discovery_poller.h"

#include "launcher/host_discovery.h"

namespace hvd::launcher::elastic {

DiscoveryPoller::DiscoveryPoller(std::string script, int default_slots,
                                 std::chrono::milliseconds interval,
                                 std::chrono::milliseconds timeout, EventQueue& queue)
    : script_(std::move(script)),
      default_slots_(default_slots),
      interval_(interval),
      timeout_(timeout),
      queue_(queue),
      thread_([this] { loop(); }) {}

DiscoveryPoller::~DiscoveryPoller() { stop(); }

void DiscoveryPoller::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DiscoveryPoller::loop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (stop_cv_.wait_for(lock, interval_, [&] { return stopped_; })) return;
    }
    auto hosts = run_host_discovery(script_, default_slots_, timeout_, /*need_hosts=*/false);
    HostsDiscovered event;
    if (hosts.is_ok()) {
      event.hosts = std::move(hosts).value();
    } else {
      event.status = hosts.status();
    }
    queue_.push(std::move(event));
  }
}

}  // namespace hvd::launcher::elastic
