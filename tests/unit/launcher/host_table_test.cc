#include "launcher/elastic/host_table.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace hvd::launcher::elastic {

namespace {

using namespace std::chrono_literals;
using Strings = std::vector<std::string>;

// A fake clock: every time is t0 plus an offset the test names.
const Clock::time_point t0{};

HostTable table(std::vector<HostSlots> hosts, CooldownRange cooldown = {10s, 300s}) {
  return HostTable(std::move(hosts), cooldown);
}

// Fails `host`'s workers until the table blacklists it; returns the cooldown.
std::chrono::seconds blacklist_by_failures(HostTable& t, const std::string& host,
                                           Clock::time_point now) {
  for (int i = 1; i < kFailuresToBlacklist; ++i) REQUIRE_FALSE(t.worker_failed(host, now));
  auto cooldown = t.worker_failed(host, now);
  REQUIRE(cooldown.has_value());
  return *cooldown;
}

}  // namespace

TEST_CASE("host table: the listed hosts, their slots and their order", "[elastic]") {
  HostTable t = table({{"h2", 2}, {"h1", 4}});
  CHECK(t.hosts() == Strings{"h2", "h1"});
  CHECK(t.known() == Strings{"h2", "h1"});
  CHECK(t.slots("h2") == 2);
  CHECK(t.slots("h1") == 4);
  CHECK(t.slots("h9") == 0);
  CHECK(t.listed("h1"));
  CHECK_FALSE(t.listed("h9"));
  CHECK(t.usable("h1", t0));
  CHECK_FALSE(t.usable("h9", t0));
  CHECK(t.why_unusable("h1", t0).empty());
  CHECK(t.why_unusable("h9", t0) == "h9 missing (not listed)");
  CHECK_FALSE(t.blacklisted_until("h1", t0));
}

TEST_CASE("host table: update reports added and removed hosts", "[elastic]") {
  HostTable t = table({{"h1", 2}, {"h2", 2}});

  HostChanges same = t.update({{"h1", 2}, {"h2", 2}});
  CHECK(same.empty());

  HostChanges c = t.update({{"h3", 1}, {"h1", 2}});
  CHECK(c.added == Strings{"h3"});
  CHECK(c.removed == Strings{"h2"});
  CHECK_FALSE(c.empty());
  CHECK(t.hosts() == Strings{"h3", "h1"});
  CHECK(t.known() == Strings{"h1", "h2", "h3"});  // first-seen order, h2 kept
  CHECK_FALSE(t.listed("h2"));
  CHECK(t.slots("h2") == 0);
  CHECK(t.why_unusable("h2", t0) == "h2 missing (not listed)");

  // More slots count as added; fewer slots are neither added nor removed.
  HostChanges more = t.update({{"h3", 3}, {"h1", 1}});
  CHECK(more.added == Strings{"h3"});
  CHECK(more.removed.empty());
  CHECK(t.slots("h3") == 3);
  CHECK(t.slots("h1") == 1);

  // A host listed again after it was removed is added again.
  HostChanges back = t.update({{"h3", 3}, {"h1", 1}, {"h2", 2}});
  CHECK(back.added == Strings{"h2"});
  CHECK(back.removed.empty());
  CHECK(t.usable("h2", t0));
  CHECK(t.known() == Strings{"h1", "h2", "h3"});

  // An empty list removes every host.
  HostChanges none = t.update({});
  CHECK(none.removed == Strings{"h3", "h1", "h2"});
  CHECK(t.hosts().empty());
}

TEST_CASE("host table: three failures in a row blacklist a host for the low cooldown",
          "[elastic]") {
  HostTable t = table({{"h1", 2}, {"h2", 2}});
  static_assert(kFailuresToBlacklist == 3);
  CHECK_FALSE(t.worker_failed("h1", t0));
  CHECK_FALSE(t.worker_failed("h1", t0 + 1s));
  CHECK(t.usable("h1", t0 + 1s));
  auto cooldown = t.worker_failed("h1", t0 + 2s);
  REQUIRE(cooldown.has_value());
  CHECK(*cooldown == 10s);

  CHECK_FALSE(t.usable("h1", t0 + 2s));
  CHECK(t.listed("h1"));  // still listed: only blacklisted
  CHECK(t.blacklisted_until("h1", t0 + 2s) == t0 + 12s);
  CHECK(t.why_unusable("h1", t0 + 4s) ==
        "h1 missing (3 failed workers in a row, blacklisted for 8 s more)");
  // Partial seconds round up.
  CHECK(t.why_unusable("h1", t0 + 4500ms) ==
        "h1 missing (3 failed workers in a row, blacklisted for 8 s more)");
  CHECK_FALSE(t.usable("h1", t0 + 11999ms));
  // The cooldown ends at exactly its end.
  CHECK(t.usable("h1", t0 + 12s));
  CHECK_FALSE(t.blacklisted_until("h1", t0 + 12s));
  CHECK(t.why_unusable("h1", t0 + 12s).empty());

  // Other hosts are untouched.
  CHECK(t.usable("h2", t0 + 2s));
}

TEST_CASE("host table: a joined worker ends the failure streak", "[elastic]") {
  HostTable t = table({{"h1", 1}});
  CHECK_FALSE(t.worker_failed("h1", t0));
  CHECK_FALSE(t.worker_failed("h1", t0));
  t.worker_joined("h1");
  CHECK_FALSE(t.worker_failed("h1", t0));
  CHECK_FALSE(t.worker_failed("h1", t0));
  CHECK(t.usable("h1", t0));
  CHECK(t.worker_failed("h1", t0) == std::optional<std::chrono::seconds>(10s));
  CHECK_FALSE(t.usable("h1", t0));

  // A blacklisting starts a new streak: two more failures do not blacklist again.
  CHECK_FALSE(t.worker_failed("h1", t0 + 10s));
  CHECK_FALSE(t.worker_failed("h1", t0 + 10s));
  CHECK(t.usable("h1", t0 + 10s));

  // Unknown hosts: nothing to count.
  t.worker_joined("h9");
  CHECK_FALSE(t.worker_failed("h9", t0));
  CHECK(t.known() == Strings{"h1"});
}

TEST_CASE("host table: a lost agent blacklists its host at once", "[elastic]") {
  HostTable t = table({{"h1", 1}, {"h2", 1}});
  CHECK(t.agent_lost("h2", t0 + 1s) == 10s);
  CHECK_FALSE(t.usable("h2", t0 + 1s));
  CHECK(t.why_unusable("h2", t0 + 3s) == "h2 missing (agent lost, blacklisted for 8 s more)");
  CHECK(t.usable("h2", t0 + 11s));
  CHECK(t.usable("h1", t0 + 1s));

  // A host the list never named becomes known (and stays unlisted).
  CHECK(t.agent_lost("h7", t0) == 10s);
  CHECK(t.known() == Strings{"h1", "h2", "h7"});
  CHECK_FALSE(t.listed("h7"));
  CHECK(t.why_unusable("h7", t0) == "h7 missing (agent lost, blacklisted for 10 s more)");
  CHECK(t.why_unusable("h7", t0 + 10s) == "h7 missing (not listed)");
}

TEST_CASE("host table: one outage is one cooldown step", "[elastic]") {
  // Two workers that cannot start on a host whose agent is down (one
  // attempt): the second keeps the first's cooldown instead of doubling it.
  HostTable t = table({{"h1", 2}});
  CHECK(t.agent_lost("h1", t0) == 10s);
  CHECK(t.agent_lost("h1", t0) == 10s);
  CHECK(t.agent_lost("h1", t0 + 3500ms) == 7s);  // the time left, rounded up
  CHECK(t.agent_lost("h1", t0 + 10s) == 20s);    // a new outage: the next step
}

TEST_CASE("host table: the cooldown doubles per blacklisting, capped at the high end",
          "[elastic]") {
  HostTable t = table({{"h1", 1}, {"h2", 1}}, {1s, 4s});
  Clock::time_point now = t0;
  std::vector<std::chrono::seconds> cooldowns;
  for (int i = 0; i < 5; ++i) {
    auto cooldown = blacklist_by_failures(t, "h1", now);
    cooldowns.push_back(cooldown);
    CHECK_FALSE(t.usable("h1", now));
    CHECK_FALSE(t.usable("h1", now + cooldown - 1ms));
    now += cooldown;
    CHECK(t.usable("h1", now));  // usable again once the cooldown is over
  }
  CHECK(cooldowns == std::vector<std::chrono::seconds>{1s, 2s, 4s, 4s, 4s});

  // Lost agents and failures share the count; each host has its own.
  CHECK(t.agent_lost("h2", now) == 1s);
  CHECK(t.agent_lost("h2", now + 1s) == 2s);
  CHECK(t.agent_lost("h1", now) == 4s);

  // The default range: 10, 20, 40, 80, 160, 300 (not 320), 300.
  HostTable d = table({{"h1", 1}});
  std::vector<std::chrono::seconds> defaults;
  for (Clock::time_point at = t0; defaults.size() < 7; at += 301s) {
    defaults.push_back(d.agent_lost("h1", at));
  }
  CHECK(defaults == std::vector<std::chrono::seconds>{10s, 20s, 40s, 80s, 160s, 300s, 300s});
}

TEST_CASE("host table: a blacklisted host removed from the list says why it is missing",
          "[elastic]") {
  HostTable t = table({{"h1", 1}, {"h2", 1}});
  t.agent_lost("h1", t0);
  t.update({{"h2", 1}});
  // The blacklisting is the stronger reason while it lasts.
  CHECK(t.why_unusable("h1", t0 + 1s) == "h1 missing (agent lost, blacklisted for 9 s more)");
  CHECK(t.why_unusable("h1", t0 + 10s) == "h1 missing (not listed)");
  // Listed again during the cooldown: still not usable until it ends.
  t.update({{"h2", 1}, {"h1", 1}});
  CHECK_FALSE(t.usable("h1", t0 + 5s));
  CHECK(t.usable("h1", t0 + 10s));
}

}  // namespace hvd::launcher::elastic
