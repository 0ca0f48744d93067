#include "launcher/host_resolution.h"

#include <netdb.h>
#include <sys/socket.h>

#include <future>
#include <memory>
#include <thread>

namespace hvd::launcher {

common::Status resolve_host(const std::string& host, std::chrono::milliseconds timeout) {
  // The lookup runs on a thread of its own: getaddrinfo has no deadline.
  auto result = std::make_shared<std::promise<int>>();
  std::future<int> done = result->get_future();
  std::thread([host, result] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
    if (list != nullptr) freeaddrinfo(list);
    result->set_value(rc);
  }).detach();
  if (done.wait_for(timeout) != std::future_status::ready) {
    return common::not_found("host '" + host + "' does not resolve within " +
                             std::to_string(timeout.count() / 1000) + " s (is DNS reachable?)");
  }
  if (const int rc = done.get(); rc != 0) {
    return common::not_found("host '" + host + "' does not resolve: " + gai_strerror(rc));
  }
  return common::Status::ok();
}

common::Status check_hosts_resolve(const std::vector<AgentTarget>& targets,
                                   std::chrono::milliseconds timeout) {
  for (const AgentTarget& target : targets) {
    if (target.local) continue;
    if (common::Status s = resolve_host(target.host, timeout); !s.is_ok()) return s;
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher
