#include "launcher/elastic/host_table.h"

#include <algorithm>

namespace hvd::launcher::elastic {

HostTable::HostTable(std::vector<HostSlots> hosts, CooldownRange cooldown)
    : cooldown_(cooldown) {
  update(hosts);
}

HostChanges HostTable::update(const std::vector<HostSlots>& hosts) {
  HostChanges changes;
  std::vector<std::string> now_listed;
  for (const HostSlots& h : hosts) {
    auto [it, fresh] = hosts_.try_emplace(h.host);
    if (fresh) order_.push_back(h.host);
    if (it->second.slots < h.slots) changes.added.push_back(h.host);
    it->second.slots = h.slots;
    now_listed.push_back(h.host);
  }
  for (const std::string& name : listed_) {
    if (std::find(now_listed.begin(), now_listed.end(), name) == now_listed.end()) {
      hosts_[name].slots = 0;
      changes.removed.push_back(name);
    }
  }
  listed_ = std::move(now_listed);
  return changes;
}

std::chrono::seconds HostTable::blacklist(Host& host, Clock::time_point now, std::string reason) {
  // low, 2 low, 4 low, ... at most high.
  auto cooldown = cooldown_.low;
  for (int i = 0; i < host.blacklistings && cooldown < cooldown_.high; ++i) cooldown *= 2;
  cooldown = std::min(cooldown, cooldown_.high);
  ++host.blacklistings;
  host.streak = 0;
  host.until = now + cooldown;
  host.reason = std::move(reason);
  return cooldown;
}

std::optional<std::chrono::seconds> HostTable::worker_failed(const std::string& host,
                                                             Clock::time_point now) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return std::nullopt;
  if (++it->second.streak < kFailuresToBlacklist) return std::nullopt;
  return blacklist(it->second, now,
                   std::to_string(kFailuresToBlacklist) + " failed workers in a row");
}

void HostTable::worker_joined(const std::string& host) {
  auto it = hosts_.find(host);
  if (it != hosts_.end()) it->second.streak = 0;
}

std::chrono::seconds HostTable::agent_lost(const std::string& host, Clock::time_point now) {
  auto [it, fresh] = hosts_.try_emplace(host);
  if (fresh) order_.push_back(host);
  // One outage, one cooldown step: a host blacklisted already (a second
  // worker that could not start there in the same attempt) keeps its
  // cooldown; the time left comes back.
  if (it->second.until && *it->second.until > now) {
    return std::chrono::ceil<std::chrono::seconds>(*it->second.until - now);
  }
  return blacklist(it->second, now, "agent lost");
}

bool HostTable::listed(const std::string& host) const {
  auto it = hosts_.find(host);
  return it != hosts_.end() && it->second.slots > 0;
}

int HostTable::slots(const std::string& host) const {
  auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.slots;
}

std::optional<Clock::time_point> HostTable::blacklisted_until(const std::string& host,
                                                              Clock::time_point now) const {
  auto it = hosts_.find(host);
  if (it == hosts_.end() || !it->second.until || *it->second.until <= now) return std::nullopt;
  return it->second.until;
}

bool HostTable::usable(const std::string& host, Clock::time_point now) const {
  return listed(host) && !blacklisted_until(host, now);
}

std::vector<std::string> HostTable::hosts() const { return listed_; }

std::string HostTable::why_unusable(const std::string& host, Clock::time_point now) const {
  if (usable(host, now)) return "";
  if (auto until = blacklisted_until(host, now)) {
    auto left = std::chrono::ceil<std::chrono::seconds>(*until - now).count();
    return host + " missing (" + hosts_.at(host).reason + ", blacklisted for " +
           std::to_string(left) + " s more)";
  }
  return host + " missing (not listed)";
}

}  // namespace hvd::launcher::elastic
