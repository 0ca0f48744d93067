// The hosts an elastic job may use (docs/elastic.md): their slots as the
// host list or the discovery script gives them, whether the list names them
// now, and their failures. A worker that fails counts against its host; a
// host whose workers fail kFailuresToBlacklist times in a row (no worker of
// it joined a round in between), or whose agent is lost, is blacklisted for
// a cooldown that doubles with every blacklisting of that host, from the
// low to the high end of --blacklist-cooldown-range. A blacklisted host
// gets no new workers; the ones it runs go on. Pure bookkeeping: the caller
// supplies the clock; not thread-safe (the job session's thread owns it).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/host_spec.h"

namespace hvd::launcher::elastic {

using Clock = std::chrono::steady_clock;

inline constexpr int kFailuresToBlacklist = 3;

struct CooldownRange {
  std::chrono::seconds low{10};
  std::chrono::seconds high{300};
};

// What a new host list changed.
struct HostChanges {
  std::vector<std::string> added;    // listed now, not before (or with more slots)
  std::vector<std::string> removed;  // listed before, not now
  bool empty() const { return added.empty() && removed.empty(); }
};

class HostTable {
 public:
  HostTable(std::vector<HostSlots> hosts, CooldownRange cooldown);

  // The list the job uses from now on (the discovery script's output).
  HostChanges update(const std::vector<HostSlots>& hosts);

  // A worker on `host` failed. Returns the cooldown when this failure
  // blacklisted the host.
  std::optional<std::chrono::seconds> worker_failed(const std::string& host, Clock::time_point now);
  // A worker on `host` joined a round: its failure streak ends.
  void worker_joined(const std::string& host);
  // The host's agent is lost: blacklisted at once, unless it is already
  // (then its cooldown stays). Returns the cooldown (left).
  std::chrono::seconds agent_lost(const std::string& host, Clock::time_point now);

  // Listed, and not blacklisted at `now`.
  bool usable(const std::string& host, Clock::time_point now) const;
  bool listed(const std::string& host) const;
  int slots(const std::string& host) const;  // 0 when not listed
  // The listed hosts in list order.
  std::vector<std::string> hosts() const;
  // Every host ever listed, in first-seen order.
  const std::vector<std::string>& known() const { return order_; }
  // When the host's blacklisting ends; none when it is not blacklisted at `now`.
  std::optional<Clock::time_point> blacklisted_until(const std::string& host,
                                                     Clock::time_point now) const;
  // "h3 missing (agent lost, blacklisted for 8 s more)" / "h3 missing (not
  // listed)"; empty when usable.
  std::string why_unusable(const std::string& host, Clock::time_point now) const;

 private:
  struct Host {
    int slots = 0;  // 0: not listed now
    int streak = 0;  // failures in a row
    int blacklistings = 0;
    std::optional<Clock::time_point> until;
    std::string reason;  // of the last blacklisting
  };
  std::chrono::seconds blacklist(Host& host, Clock::time_point now, std::string reason);

  CooldownRange cooldown_;
  std::map<std::string, Host> hosts_;
  std::vector<std::string> order_;     // first-seen order
  std::vector<std::string> listed_;    // the current list's order
};

}  // namespace hvd::launcher::elastic
