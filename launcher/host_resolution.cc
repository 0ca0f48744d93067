#include "launcher/host_resolution.h"

#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "common/host_lookup.h"

namespace hvd::launcher {

common::Status resolve_host(const std::string& host, std::chrono::milliseconds timeout) {
  // The lookup runs on a thread of its own: getaddrinfo has no deadline.
  auto result = std::make_shared<std::promise<std::optional<std::string>>>();
  std::future<std::optional<std::string>> done = result->get_future();
  std::thread([host, result] { result->set_value(common::resolve_problem(host)); }).detach();
  if (done.wait_for(timeout) != std::future_status::ready) {
    return common::not_found("host '" + host + "' does not resolve within " +
                             std::to_string(timeout.count() / 1000) + " s (is DNS reachable?)");
  }
  if (const auto problem = done.get()) {
    return common::not_found("host '" + host + "' does not resolve: " + *problem);
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
