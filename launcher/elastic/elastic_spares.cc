// ElasticMachine's hot spares (--spares; spare_pool.h holds their
// bookkeeping): promotion into a failed worker's slot, keeping --spares
// alive on the usable hosts, a spare that fails before its promotion.
#include <algorithm>

#include "launcher/elastic/elastic_machine.h"

namespace hvd::launcher::elastic {

std::string ElasticMachine::promote_into(int slot, const std::string& preferred, Actions& out,
                                         Clock::time_point now) {
  // Only into a host with a free slot (the failed worker's has one now): a
  // slot is where a worker may run (a GPU, say), whoever started it.
  const std::optional<int> spare = spares_.pick(preferred, [&](const std::string& host) {
    return hosts_.usable(host, now) && live_on(host) < hosts_.slots(host);
  });
  if (!spare) return "";
  const std::string host = spares_.host_of(*spare);
  const bool waiting = spares_.waiting(*spare);
  spares_.promote(*spare, slot);
  workers_[static_cast<size_t>(slot)] = {host, Phase::kStarting, false, *spare};
  out.push_back(PromoteSpare{*spare, slot});
  return "promoted spare " + std::to_string(*spare) + " on host " + host + " into rank " +
         std::to_string(slot) + (waiting ? "" : " (it is still starting)");
}

void ElasticMachine::refill_spares(Actions& out, Clock::time_point now) {
  if (spares_stopped_ || finishing() || state_ == State::kFailed || state_ == State::kDone) return;
  std::vector<int> started;
  std::vector<std::string> placed_on;
  while (spares_.live() < spares_.count()) {
    // The fewest spares first; among those, the most free slots (a spare
    // can be promoted only into a host with a free slot: its own when one of
    // its workers fails, any host with room for a lost host's worker).
    std::string host;
    std::pair<int, int> best;
    for (const std::string& h : hosts_.hosts()) {
      if (!hosts_.usable(h, now)) continue;
      const std::pair<int, int> key{spares_.live_on(h), live_on(h) - hosts_.slots(h)};
      if (host.empty() || key < best) {
        host = h;
        best = key;
      }
    }
    if (host.empty()) break;
    const int id = spares_.add(host);
    out.push_back(StartSpare{id, host});
    started.push_back(id);
    if (std::find(placed_on.begin(), placed_on.end(), host) == placed_on.end()) {
      placed_on.push_back(host);
    }
  }
  if (started.empty()) return;
  std::string ids, hosts;
  for (int id : started) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  for (const std::string& h : placed_on) hosts += (hosts.empty() ? "" : ", ") + h;
  out.push_back(Say{std::string(started.size() == 1 ? "started hot spare " : "started hot spares ") +
                    ids + " on host" + (placed_on.size() == 1 ? " " : "s ") + hosts});
}

void ElasticMachine::spare_ready(int spare) {
  spares_.ready(spare);
  watch_.arrived(spare);
}

Actions ElasticMachine::spare_exited(int spare, bool failed, int code, const std::string& what,
                                     Clock::time_point now) {
  Actions out;
  (void)code;
  watch_.forget(spare);
  if (!spares_.gone(spare) || state_ == State::kFailed || state_ == State::kDone || finishing()) {
    return out;
  }
  if (!failed) {
    spares_stopped_ = true;
    out.push_back(Say{what + " before it was promoted (does the script call hvd.init()?); no "
                      "more hot spares are started"});
    return out;
  }
  spare_failed(what, " before it was promoted", out, now);
  return out;
}

void ElasticMachine::spare_failed(const std::string& what, const std::string& detail,
                                  Actions& out, Clock::time_point now) {
  if (resets_ >= limits_.reset_limit) {
    spares_stopped_ = true;
    out.push_back(Say{what + "; no more hot spares are started: the reset limit (" +
                      std::to_string(limits_.reset_limit) + ", --reset-limit) is used up"});
    return;
  }
  ++resets_;
  out.push_back(Say{what + detail + " (reset " + std::to_string(resets_) + " of " +
                    std::to_string(limits_.reset_limit) + ")"});
  refill_spares(out, now);
}

}  // namespace hvd::launcher::elastic
