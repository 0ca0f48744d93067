#include "launcher/elastic/elastic_machine.h"

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

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// One line per action, e.g. "start 1 h1 replacement", "end 124 <error>".
std::string render(const Action& action) {
  struct {
    std::string operator()(const StartWorker& a) const {
      return "start " + std::to_string(a.slot) + " " + a.host +
             (a.replacement ? " replacement" : "");
    }
    std::string operator()(const StartSpare& a) const {
      return "spare " + std::to_string(a.spare) + " " + a.host;
    }
    std::string operator()(const PromoteSpare& a) const {
      return "promote " + std::to_string(a.spare) + " " + std::to_string(a.slot);
    }
    std::string operator()(const StopWorker& a) const { return "stop " + std::to_string(a.slot); }
    std::string operator()(const StopSpare& a) const {
      return "stop spare " + std::to_string(a.spare);
    }
    std::string operator()(const SlotLost& a) const { return "lost " + std::to_string(a.slot); }
    std::string operator()(const HostsChanged& a) const {
      std::vector<std::string> slots;
      for (int s : a.removed_slots) slots.push_back(std::to_string(s));
      return "hosts +" + join(a.added) + " -" + join(a.removed) + " [" + join(slots) + "]";
    }
    std::string operator()(const Say& a) const { return "say " + a.text; }
    std::string operator()(const EndJob& a) const {
      return "end " + std::to_string(a.code) + " " + a.error;
    }
  } visitor;
  return std::visit(visitor, action);
}

// The actions rendered; with `kind` ("say", "start", ...) only those of that kind.
Strings render(const Actions& actions, const std::string& kind = "") {
  Strings out;
  for (const Action& a : actions) {
    if (std::string line = render(a); line.rfind(kind, 0) == 0) out.push_back(line);
  }
  return out;
}

ElasticMachine machine(Limits limits, std::vector<HostSlots> hosts, const Strings& initial,
                       CooldownRange cooldown = {10s, 300s}) {
  return ElasticMachine(limits, HostTable(std::move(hosts), cooldown), initial, t0);
}

// Every live worker joins and the round forms.
void form_round(ElasticMachine& m) {
  for (int slot : m.live_slots()) m.worker_joined(slot);
  m.round_formed(1, static_cast<int>(m.live_slots().size()));
}

std::string killed(int slot, const std::string& host) {
  return "rank " + std::to_string(slot) + " on host " + host + " was killed by signal 9 (SIGKILL)";
}

}  // namespace

TEST_CASE("elastic machine: a crashed worker is replaced in its slot on its host", "[elastic]") {
  ElasticMachine m = machine({1, 4, 3, 600s}, {{"h1", 2}, {"h2", 2}}, {"h1", "h1", "h2", "h2"});
  CHECK(m.state() == State::kStarting);
  CHECK(m.starting(0));
  m.worker_joined(0);
  m.round_formed(1, 1);  // ranks 1 to 3 still start: not running yet
  CHECK(m.state() == State::kStarting);
  form_round(m);
  CHECK(m.state() == State::kRunning);
  CHECK(std::string(state_name(m.state())) == "running");
  CHECK(m.tick(t0 + 1s).empty());

  Actions out = m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 1s);
  CHECK(render(out) ==
        Strings{"lost 1", "start 1 h1 replacement",
                "say rank 1 on host h1 was killed by signal 9 (SIGKILL); started a replacement "
                "(reset 1 of 3)"});
  CHECK(m.resets() == 1);
  CHECK(m.state() == State::kResetting);
  CHECK(m.starting(1));
  CHECK(m.host_of(1) == "h1");
  CHECK(m.live_slots() == std::vector<int>{0, 1, 2, 3});
  m.worker_joined(1);
  CHECK(render(m.round_formed(2, 4)) == Strings{"say the job is back at full size (4 workers)"});
  CHECK(m.state() == State::kRunning);
  CHECK(m.round_formed(3, 4).empty());  // said once

  CHECK(m.worker_exited(9, true, 1, "not a slot of the job", t0 + 2s).empty());
  CHECK(m.host_of(9) == "");
  CHECK(m.resets() == 1);
}

TEST_CASE("elastic machine: past the reset limit the job ends naming it", "[elastic]") {
  ElasticMachine m = machine({1, 2, 2, 600s}, {{"h1", 2}}, {"h1", "h1"});
  form_round(m);
  const std::string what = "rank 0 on host h1 exited with code 7";
  for (int reset = 1; reset <= 2; ++reset) {
    CHECK(render(m.worker_exited(0, true, 7, what, t0 + 1s), "start") ==
          Strings{"start 0 h1 replacement"});
    CHECK(m.resets() == reset);
    form_round(m);  // it joins: no blacklisting
  }
  Actions out = m.worker_exited(0, true, 7, what, t0 + 2s);
  CHECK(render(out) == Strings{"lost 0", "end 7 rank 0 on host h1 exited with code 7; the reset "
                                         "limit (2, --reset-limit) is used up"});
  CHECK(m.state() == State::kFailed);
  CHECK(m.resets() == 2);
  // The job is over: nothing more happens.
  CHECK(m.worker_exited(1, true, 1, "rank 1 exited with code 1", t0 + 3s).empty());
  CHECK(m.tick(t0 + 700s).empty());
  CHECK(m.hosts_discovered({{"h1", 2}, {"h2", 2}}, t0 + 3s).empty());
}

TEST_CASE("elastic machine: three failures in a row move a slot to another host", "[elastic]") {
  ElasticMachine m =
      machine({1, 3, 10, 600s}, {{"h1", 2}, {"h2", 1}, {"h3", 1}}, {"h1", "h1", "h2"});
  form_round(m);
  CHECK(render(m.worker_exited(1, true, 1, "rank 1 failed", t0 + 1s), "start") ==
        Strings{"start 1 h1 replacement"});
  CHECK(render(m.worker_exited(1, true, 1, "rank 1 failed", t0 + 2s), "start") ==
        Strings{"start 1 h1 replacement"});
  // The third in a row (the replacements never joined): h1 is blacklisted,
  // h2 is full, h3 has a free slot.
  Actions out = m.worker_exited(1, true, 1, "rank 1 failed", t0 + 3s);
  CHECK(render(out) ==
        Strings{"lost 1", "say host h1 is blacklisted for 10 s: 3 failed workers in a row",
                "start 1 h3 replacement",
                "say rank 1 failed; started a replacement on host h3 (reset 3 of 10)"});
  CHECK(m.host_of(1) == "h3");
  CHECK(m.host_of(0) == "h1");  // h1's other worker goes on
  CHECK(m.live_slots() == std::vector<int>{0, 1, 2});
  CHECK_FALSE(m.host_table().usable("h1", t0 + 12s));
  CHECK(m.host_table().usable("h1", t0 + 13s));
}

TEST_CASE("elastic machine: a slot without a host starts after the cooldown", "[elastic]") {
  ElasticMachine m = machine({1, 2, 20, 600s}, {{"h1", 1}, {"h2", 1}}, {"h1", "h2"}, {1s, 4s});
  form_round(m);
  Clock::time_point now = t0;
  const std::vector<std::chrono::seconds> expected{1s, 2s, 4s, 4s};
  for (size_t round = 0; round < expected.size(); ++round) {
    const auto cooldown = expected[round];
    Actions out;
    for (int i = 0; i < kFailuresToBlacklist; ++i) out = m.worker_exited(0, true, 1, "x", now);
    CHECK(render(out, "say") ==
          Strings{"say host h1 is blacklisted for " + std::to_string(cooldown.count()) +
                      " s: 3 failed workers in a row",
                  "say x; no usable host has a free slot for a replacement (reset " +
                      std::to_string(3 * (round + 1)) + " of 20)"});
    CHECK(m.live_slots() == std::vector<int>{1});  // h2's worker goes on
    CHECK(m.tick(now + cooldown - 1ms).empty());
    now += cooldown;
    CHECK(render(m.tick(now)) ==
          Strings{"start 0 h1 replacement", "say started rank 0 on host h1 (the job grows to 2 "
                                            "workers)"});
  }
  CHECK(m.resets() == 12);
}

TEST_CASE("elastic machine: a lost agent loses its workers, the job goes on", "[elastic]") {
  ElasticMachine m = machine({2, 4, 10, 600s}, {{"h1", 2}, {"h2", 2}, {"h3", 1}},
                             {"h1", "h1", "h2", "h2"});
  form_round(m);
  Actions out = m.agent_lost({"h2"}, "connection reset", t0 + 5s);
  CHECK(render(out) ==
        Strings{"lost 2", "lost 3",
                "say lost the agent on host h2 (ranks 2, 3): connection reset; host h2 is "
                "blacklisted for 10 s",
                "hosts + -h2 [2,3]", "start 2 h3 replacement",
                "say started rank 2 again on host h3"});
  CHECK(m.state() == State::kResetting);
  CHECK(m.resets() == 1);
  CHECK(m.live_slots() == std::vector<int>{0, 1, 2});
  // The cooldown over, the job grows back onto h2.
  CHECK(m.tick(t0 + 14s).empty());
  CHECK(render(m.tick(t0 + 15s), "start") == Strings{"start 3 h2 replacement"});
  // A lost agent with no workers only blacklists.
  CHECK(render(m.agent_lost({"h9"}, "gone", t0 + 16s)) ==
        Strings{"say lost the agent on host h9: gone; host h9 is blacklisted for 10 s"});
  CHECK(m.resets() == 1);
}

TEST_CASE("elastic machine: below --min-np: what is missing, then the timeout", "[elastic]") {
  ElasticMachine m = machine({2, 2, 10, 30s}, {{"h1", 1}, {"h2", 1}}, {"h1", "h2"}, {60s, 600s});
  form_round(m);
  Actions out = m.agent_lost({"h2"}, "connection reset", t0);
  CHECK(render(out, "say").back() ==
        "say waiting for 1 more worker (have 1 of min 2): h2 missing (agent lost, "
        "blacklisted for 60 s more)");
  CHECK(render(out, "end").empty());
  CHECK(m.tick(t0 + 4s).empty());  // a progress line every 5 s
  CHECK(render(m.tick(t0 + 5s)) ==
        Strings{"say waiting for 1 more worker (have 1 of min 2): h2 missing (agent lost, "
                "blacklisted for 55 s more)"});
  CHECK(m.tick(t0 + 29s).size() == 1);
  CHECK(m.state() == State::kResetting);
  CHECK(render(m.tick(t0 + 30s)) ==
        Strings{"end 124 fewer workers than --min-np for 30 s (--elastic-timeout): have 1 of "
                "min 2; h2 missing (agent lost, blacklisted for 30 s more)"});
  CHECK(m.state() == State::kFailed);
  CHECK(m.tick(t0 + 31s).empty());
}

TEST_CASE("elastic machine: back at --min-np the elastic timeout starts over", "[elastic]") {
  ElasticMachine m = machine({2, 2, 10, 30s}, {{"h1", 1}, {"h2", 1}}, {"h1", "h2"}, {60s, 600s});
  form_round(m);
  // While rank 1 is being stopped it still counts.
  CHECK(render(m.hosts_discovered({{"h1", 1}}, t0), "say") ==
        Strings{"say host discovery: host h2 is no longer listed",
                "say stopping rank 1 (their hosts are no longer listed)"});
  const std::string waiting =
      "say waiting for 1 more worker (have 1 of min 2): h2 missing (not listed)";
  CHECK(render(m.worker_exited(1, true, 137, killed(1, "h2"), t0 + 1s)) == Strings{waiting});
  CHECK(render(m.tick(t0 + 6s)) == Strings{waiting});
  CHECK(render(m.hosts_discovered({{"h1", 1}, {"h2", 1}}, t0 + 25s)) ==
        Strings{"say host discovery: host h2 is listed with 1 slot(s)", "hosts +h2 - []",
                "start 1 h2 replacement",
                "say started rank 1 on host h2 (the job grows to 2 workers)"});
  CHECK(m.tick(t0 + 40s).empty());  // 39 s after it fell below: no timeout
  // Below again: a fresh 30 s.
  CHECK(render(m.agent_lost({"h2"}, "reset", t0 + 45s), "end").empty());
  CHECK(m.tick(t0 + 74s).size() == 1);  // a progress line
  CHECK(render(m.tick(t0 + 75s)) ==
        Strings{"end 124 fewer workers than --min-np for 30 s (--elastic-timeout): have 1 of "
                "min 2; h2 missing (agent lost, blacklisted for 30 s more)"});
}

TEST_CASE("elastic machine: every host blacklisted, no worker left: job fails", "[elastic]") {
  SECTION("by failures") {
    ElasticMachine m = machine({1, 1, 10, 600s}, {{"h1", 1}}, {"h1"});
    form_round(m);
    m.worker_exited(0, true, 1, "rank 0 failed", t0);
    m.worker_exited(0, true, 1, "rank 0 failed", t0);
    Actions out = m.worker_exited(0, true, 1, "rank 0 failed", t0);
    CHECK(render(out, "end") ==
          Strings{"end 1 every host is blacklisted and no worker is left: h1 missing (3 failed "
                  "workers in a row, blacklisted for 10 s more)"});
    CHECK(m.state() == State::kFailed);
  }
  SECTION("by lost agents") {
    ElasticMachine m = machine({1, 2, 10, 600s}, {{"h1", 1}, {"h2", 1}}, {"h1", "h2"});
    form_round(m);
    CHECK(render(m.agent_lost({"h1"}, "reset", t0), "end").empty());
    Actions out = m.agent_lost({"h2"}, "reset", t0 + 2s);
    CHECK(render(out, "end") ==
          Strings{"end 1 every host is blacklisted and no worker is left: h1 missing (agent "
                  "lost, blacklisted for 8 s more), h2 missing (agent lost, blacklisted for 10 "
                  "s more)"});
    CHECK(m.state() == State::kFailed);
  }
}

TEST_CASE("elastic machine: new hosts grow the job to --max-np after round 1", "[elastic]") {
  ElasticMachine m = machine({1, 4, 10, 600s}, {{"h1", 2}}, {"h1", "h1"});
  // Before the first round the job keeps its -np workers.
  CHECK(render(m.hosts_discovered({{"h1", 2}, {"h10", 1}}, t0)) ==
        Strings{"say host discovery: host h10 is listed with 1 slot(s)", "hosts +h10 - []"});
  CHECK(m.tick(t0 + 1s).empty());
  form_round(m);
  CHECK(m.state() == State::kRunning);
  // h1 gets a third slot; the free slots fill in list order, up to --max-np.
  Actions out = m.hosts_discovered({{"h10", 1}, {"h1", 3}, {"h3", 2}}, t0 + 2s);
  CHECK(render(out) ==
        Strings{"say host discovery: host h1 is listed with 3 slot(s)",
                "say host discovery: host h3 is listed with 2 slot(s)", "hosts +h1,h3 - []",
                "start 2 h10 replacement", "start 3 h1 replacement",
                "say started ranks 2, 3 on host h10, h1 (the job grows to 4 workers)"});
  CHECK(m.state() == State::kResetting);
  CHECK(m.resets() == 0);  // growing is no reset
  CHECK(m.live_slots() == std::vector<int>{0, 1, 2, 3});
  // The same list again changes nothing.
  CHECK(m.hosts_discovered({{"h10", 1}, {"h1", 3}, {"h3", 2}}, t0 + 3s).empty());
  CHECK(m.tick(t0 + 4s).empty());
}

TEST_CASE("elastic machine: workers beyond the listed slots are stopped", "[elastic]") {
  ElasticMachine m = machine({1, 4, 10, 600s}, {{"h1", 2}, {"h2", 2}}, {"h1", "h1", "h2", "h2"});
  form_round(m);
  Actions out = m.hosts_discovered({{"h1", 2}}, t0 + 1s);
  CHECK(render(out) ==
        Strings{"stop 3", "lost 3", "stop 2", "lost 2",
                "say host discovery: host h2 is no longer listed",
                "say stopping ranks 2, 3 (their hosts are no longer listed)",
                "hosts + -h2 [2,3]"});
  CHECK(m.state() == State::kResetting);
  // The same list again: they are already being stopped.
  CHECK(m.hosts_discovered({{"h1", 2}}, t0 + 2s).empty());
  // Their exits are expected: no replacement, no reset, no failure streak.
  CHECK(m.worker_exited(3, true, 137, killed(3, "h2"), t0 + 3s).empty());
  CHECK(m.worker_exited(2, true, 137, killed(2, "h2"), t0 + 3s).empty());
  CHECK(m.resets() == 0);
  CHECK(m.live_slots() == std::vector<int>{0, 1});
  CHECK(m.tick(t0 + 4s).empty());  // no usable slot left to fill

  // Fewer slots: the highest slots beyond them are stopped, once.
  CHECK(render(m.hosts_discovered({{"h1", 1}}, t0 + 5s), "stop") == Strings{"stop 1"});
  CHECK(render(m.hosts_discovered({{"h1", 1}}, t0 + 6s), "stop").empty());  // 1 has not exited
  CHECK(m.live_slots() == std::vector<int>{0, 1});
  CHECK(m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 7s).empty());
  CHECK(m.live_slots() == std::vector<int>{0});
}

TEST_CASE("elastic machine: the job is done when its members have finished", "[elastic]") {
  ElasticMachine m = machine({1, 3, 10, 600s}, {{"h1", 3}}, {"h1", "h1", "h1"});
  form_round(m);
  // Rank 2 fails; its replacement starts.
  CHECK(render(m.worker_exited(2, true, 1, "rank 2 failed", t0), "start").size() == 1);
  CHECK(m.worker_exited(0, false, 0, "rank 0 exited with code 0", t0 + 1s).empty());
  CHECK(m.state() == State::kResetting);
  // A failure once others finished is no reason to replace.
  CHECK(render(m.worker_exited(1, true, 1, "rank 1 exited with code 1", t0 + 2s)) ==
        Strings{"say rank 1 exited with code 1 after other workers finished", "end 0 "});
  CHECK(m.state() == State::kDone);  // the starting replacement is not waited for
  CHECK(m.resets() == 1);
  CHECK(m.tick(t0 + 700s).empty());

  ElasticMachine n = machine({1, 2, 10, 600s}, {{"h1", 2}}, {"h1", "h1"});
  form_round(n);
  CHECK(n.worker_exited(1, false, 0, "rank 1 exited with code 0", t0).empty());
  CHECK(render(n.worker_exited(0, false, 0, "rank 0 exited with code 0", t0)) == Strings{"end 0 "});
  CHECK(n.state() == State::kDone);

  // A worker launched at the start that never joined a round (not an hvd
  // program) is waited for: its output is the job's.
  ElasticMachine q = machine({1, 2, 10, 600s}, {{"h1", 2}}, {"h1", "h1"});
  CHECK(q.worker_exited(1, false, 0, "rank 1 exited with code 0", t0).empty());
  CHECK(q.state() == State::kStarting);
  CHECK(render(q.worker_exited(0, false, 0, "rank 0 exited with code 0", t0 + 1s)) ==
        Strings{"end 0 "});
}

TEST_CASE("elastic machine: a silent worker is killed and replaced", "[elastic]") {
  ElasticMachine m = machine({1, 2, 10, 600s}, {{"h1", 2}}, {"h1", "h1"});
  form_round(m);
  CHECK(render(m.worker_silent(1, "no heartbeat for 2 s (its process is stopped, state T)", t0)) ==
        Strings{"lost 1", "stop 1",
                "say rank 1 on host h1 stopped responding: no heartbeat for 2 s (its process is "
                "stopped, state T); killing it to replace it"});
  CHECK(m.resets() == 0);
  // Its SIGKILL exit is the failure that replaces it.
  CHECK(render(m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 1s)) ==
        Strings{"lost 1", "start 1 h1 replacement",
                "say rank 1 on host h1 was killed by signal 9 (SIGKILL); started a replacement "
                "(reset 1 of 10)"});
  CHECK(m.resets() == 1);
  CHECK(m.worker_silent(7, "late", t0).empty());  // not a slot of the job
}

TEST_CASE("elastic machine: a worker that cannot start moves to another host", "[elastic]") {
  ElasticMachine m = machine({1, 2, 10, 600s}, {{"h1", 1}, {"h2", 1}, {"h3", 1}}, {"h1", "h2"});
  form_round(m);
  m.worker_exited(1, true, 1, "rank 1 failed", t0);
  CHECK(render(m.start_failed(1, "connection refused", t0)) ==
        Strings{"say cannot start rank 1 on host h2: connection refused; host h2 is blacklisted "
                "for 10 s",
                "start 1 h3 replacement"});
  CHECK(m.host_of(1) == "h3");
  CHECK(m.start_failed(0, "not starting", t0).empty());  // rank 0 runs already

  // Once the job has failed, nothing is started any more.
  ElasticMachine f = machine({1, 2, 0, 600s}, {{"h1", 1}, {"h2", 1}, {"h3", 1}}, {"h1", "h2"});
  CHECK(render(f.worker_exited(1, true, 3, "rank 1 exited with code 3", t0), "end").size() == 1);
  CHECK(f.state() == State::kFailed);
  CHECK(f.start_failed(0, "connection refused", t0).empty());
}


TEST_CASE("elastic machine: hot spares are spread over the hosts and kept at --spares",
          "[elastic][spares]") {
  Limits limits{1, 4, 3, 600s, 2};
  ElasticMachine m = machine(limits, {{"h1", 2}, {"h2", 2}}, {"h1", "h1", "h2", "h2"});
  Actions out = m.tick(t0);
  CHECK(render(out) == Strings{"spare 4 h1", "spare 5 h2",
                               "say started hot spares 4, 5 on hosts h1, h2"});
  CHECK(m.is_spare_process(4));
  CHECK_FALSE(m.is_spare_process(3));
  CHECK(m.live_spares() == std::vector<int>{4, 5});
  CHECK(m.host_of(5) == "h2");
  CHECK(m.slot_of_process(4) == -1);  // a spare is no slot's worker
  CHECK(m.live_slots() == std::vector<int>{0, 1, 2, 3});  // nor counted as one
  CHECK(m.tick(t0 + 1s).empty());
}

TEST_CASE("elastic machine: a failed worker's slot goes to a waiting spare first",
          "[elastic][spares]") {
  Limits limits{1, 4, 3, 600s, 2};
  // h2 has a free slot: its spare can take a worker of h1's place.
  ElasticMachine m = machine(limits, {{"h1", 2}, {"h2", 3}}, {"h1", "h1", "h2", "h2"});
  CHECK(render(m.tick(t0), "spare") == Strings{"spare 4 h2", "spare 5 h1"});
  form_round(m);
  m.spare_ready(4);  // on h2; spare 5 (on h1, the failed worker's host) still starts

  Actions out = m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 1s);
  CHECK(render(out) ==
        Strings{"promote 4 1", "lost 1",
                "say rank 1 on host h1 was killed by signal 9 (SIGKILL); promoted spare 4 on "
                "host h2 into rank 1 (reset 1 of 3)",
                "spare 6 h2", "say started hot spare 6 on host h2"});
  CHECK(m.process_of(1) == 4);
  CHECK(m.slot_of_process(4) == 1);
  CHECK(m.slot_of_process(1) == -1);  // the dead process is no longer rank 1's
  CHECK(m.host_of(1) == "h2");
  CHECK(m.starting(1));
  CHECK(m.state() == State::kResetting);
  m.worker_joined(1);
  m.round_formed(2, 4);
  CHECK(m.state() == State::kRunning);

  // None waits; h2 is full now (ranks 1 to 3): only h1's spare qualifies.
  out = m.worker_exited(0, true, 137, killed(0, "h1"), t0 + 2s);
  CHECK(render(out, "promote") == Strings{"promote 5 0"});
  CHECK(render(out, "say")[0] ==
        "say rank 0 on host h1 was killed by signal 9 (SIGKILL); promoted spare 5 on host h1 "
        "into rank 0 (it is still starting) (reset 2 of 3)");
  CHECK(render(out, "spare") == Strings{"spare 7 h1"});
  // A promoted spare that fails is a failed worker: its slot gets the next
  // spare, on its host first.
  out = m.worker_exited(1, true, 1, "rank 1 on host h2 exited with code 1", t0 + 3s);
  CHECK(render(out, "promote") == Strings{"promote 6 1"});
  CHECK(m.resets() == 3);
}

TEST_CASE("elastic machine: a spare is promoted only into a host with a free slot",
          "[elastic][spares]") {
  Limits limits{1, 4, 3, 600s, 1};
  ElasticMachine m = machine(limits, {{"h1", 2}, {"h2", 2}}, {"h1", "h1", "h2", "h2"});
  CHECK(render(m.tick(t0), "spare") == Strings{"spare 4 h1"});
  form_round(m);
  m.spare_ready(4);
  // h1 is full: rank 2 of h2 gets a new process on h2, the spare stays.
  Actions out = m.worker_exited(2, true, 137, killed(2, "h2"), t0 + 1s);
  CHECK(render(out, "promote").empty());
  CHECK(render(out, "start") == Strings{"start 2 h2 replacement"});
  CHECK(m.live_spares() == std::vector<int>{4});
}

TEST_CASE("elastic machine: a spare lost before its promotion is started again",
          "[elastic][spares]") {
  Limits limits{1, 2, 2, 600s, 1};
  ElasticMachine m = machine(limits, {{"h1", 2}}, {"h1", "h1"});
  m.tick(t0);
  form_round(m);
  Actions out = m.spare_exited(2, true, 137, "hot spare 2 on host h1 was killed by signal 9 "
                               "(SIGKILL)", t0 + 1s);
  CHECK(render(out) == Strings{"say hot spare 2 on host h1 was killed by signal 9 (SIGKILL) "
                               "before it was promoted (reset 1 of 2)",
                               "spare 3 h1", "say started hot spare 3 on host h1"});
  CHECK(m.spare_exited(2, true, 137, "again", t0 + 1s).empty());  // once
  CHECK(m.state() == State::kRunning);  // the job itself is not touched
  out = m.spare_exited(3, true, 1, "hot spare 3 on host h1 exited with code 1", t0 + 2s);
  CHECK(render(out, "spare") == Strings{"spare 4 h1"});
  // Past --reset-limit: no more spares; the job goes on.
  out = m.spare_exited(4, true, 1, "hot spare 4 on host h1 exited with code 1", t0 + 3s);
  CHECK(render(out) == Strings{"say hot spare 4 on host h1 exited with code 1; no more hot "
                               "spares are started: the reset limit (2, --reset-limit) is used "
                               "up"});
  CHECK(m.tick(t0 + 4s).empty());
  CHECK(m.state() == State::kRunning);
  // A spare that exits 0 (a script without hvd.init()) is not started again.
  ElasticMachine m2 = machine(limits, {{"h1", 2}}, {"h1", "h1"});
  m2.tick(t0);
  out = m2.spare_exited(2, false, 0, "hot spare 2 on host h1 exited with code 0", t0 + 1s);
  CHECK(render(out, "spare").empty());
  CHECK(m2.tick(t0 + 2s).empty());
}

TEST_CASE("elastic machine: a lost host's spares go, its slots go to spares elsewhere",
          "[elastic][spares]") {
  Limits limits{1, 4, 3, 600s, 2};
  ElasticMachine m = machine(limits, {{"h1", 3}, {"h2", 2}}, {"h1", "h1", "h2", "h2"});
  CHECK(render(m.tick(t0), "spare") == Strings{"spare 4 h1", "spare 5 h2"});
  form_round(m);
  m.spare_ready(4);
  Actions out = m.agent_lost({"h2"}, "connection refused", t0 + 1s);
  // Promotions come before the lost slots and the REMOVED event.
  CHECK(render(out[0]) == "promote 4 2");
  CHECK(render(out, "promote") == Strings{"promote 4 2"});
  CHECK(render(out, "say")[0] ==
        "say lost the agent on host h2 (ranks 2, 3; hot spare 5): connection refused; host h2 "
        "is blacklisted for 10 s");
  CHECK(render(out, "start").empty());  // h1 is full now: rank 3 waits for room
  CHECK(m.process_of(2) == 4);
  // Two new spares, both on h1 (h2 is blacklisted).
  CHECK(m.live_spares() == std::vector<int>{6, 7});
  CHECK(m.host_of(6) == "h1");
  CHECK(m.host_of(7) == "h1");
}

// --heartbeat-timeout-seconds 3, --start-timeout 30 (process_watch.h).
Limits watched(Limits limits) {
  limits.stopped_timeout = 3s;
  limits.start_timeout = 30s;
  return limits;
}

std::string stopped_for_3s(const std::string& who) {
  return who + " has been stopped (state T in /proc) for 3 s (--heartbeat-timeout-seconds)";
}

TEST_CASE("elastic machine: a promoted spare that stays stopped is given up for the next spare",
          "[elastic][spares][starters]") {
  // The repro of issue 27 item 2: np 2, min 2, one spare; the spare is
  // stopped (SIGSTOP), then a worker dies and the spare is promoted.
  ElasticMachine m = machine(watched({2, 2, 10, 20s, 1}), {{"h1", 3}}, {"h1", "h1"});
  CHECK(render(m.tick(t0), "spare") == Strings{"spare 2 h1"});
  form_round(m);
  m.spare_ready(2);
  m.process_state(2, true, t0 + 1s);
  Actions out = m.worker_exited(0, true, 137, killed(0, "h1"), t0 + 1100ms);
  CHECK(render(out, "promote") == Strings{"promote 2 0"});
  CHECK(render(out, "spare") == Strings{"spare 3 h1"});
  CHECK(render(m.tick(t0 + 3900ms), "stop").empty());  // stopped for 2.9 s: not yet
  out = m.tick(t0 + 4s);
  CHECK(render(out) ==
        Strings{"lost 0", "stop 0",
                "say " + stopped_for_3s("rank 0 on host h1 (promoted spare 2)") +
                    " before joining a round; giving it up: killing it to replace it"});
  CHECK(render(m.tick(t0 + 5s), "stop").empty());  // once
  // Its SIGKILL exit is a failed worker's: the next spare takes the slot.
  m.spare_ready(3);
  out = m.worker_exited(0, true, 137, killed(0, "h1"), t0 + 5s);
  CHECK(render(out, "promote") == Strings{"promote 3 0"});
  CHECK(m.process_of(0) == 3);
  CHECK(m.resets() == 2);
  // The new spare, not stopped, is not given up.
  m.worker_joined(0);
  CHECK(render(m.tick(t0 + 60s), "stop").empty());
}

TEST_CASE("elastic machine: a waiting spare that stays stopped is started again, never promoted",
          "[elastic][spares][starters]") {
  ElasticMachine m = machine(watched({2, 2, 10, 20s, 1}), {{"h1", 3}}, {"h1", "h1"});
  m.tick(t0);
  form_round(m);
  m.spare_ready(2);
  m.process_state(2, true, t0 + 1s);
  CHECK(render(m.tick(t0 + 3s), "stop").empty());
  Actions out = m.tick(t0 + 4s);
  CHECK(render(out) == Strings{"stop spare 2",
                               "say " + stopped_for_3s("hot spare 2 on host h1") +
                                   "; giving it up: killing it to start another (reset 1 of 10)",
                               "spare 3 h1", "say started hot spare 3 on host h1"});
  CHECK(m.live_spares() == std::vector<int>{3});
  // A worker that fails now gets spare 3 (still starting), not the stopped one.
  out = m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 5s);
  CHECK(render(out, "promote") == Strings{"promote 3 1"});
  // The stopped spare's SIGKILL exit changes nothing more.
  CHECK(m.spare_exited(2, true, 137, "hot spare 2 on host h1 was killed by signal 9 (SIGKILL)",
                       t0 + 5s)
            .empty());
  CHECK(m.resets() == 2);
}

TEST_CASE("elastic machine: a stopped replacement is given up, one that runs again is not",
          "[elastic][starters]") {
  ElasticMachine m = machine(watched({1, 2, 10, 600s}), {{"h1", 2}}, {"h1", "h1"});
  form_round(m);
  CHECK(render(m.worker_exited(1, true, 137, killed(1, "h1"), t0), "start") ==
        Strings{"start 1 h1 replacement"});
  m.tick(t0);
  m.process_state(1, true, t0 + 1s);
  m.process_state(1, false, t0 + 3s);  // SIGCONT before the timeout
  CHECK(render(m.tick(t0 + 5s), "stop").empty());
  m.process_state(1, true, t0 + 6s);
  m.process_state(1, true, t0 + 7s);  // still stopped: the time counts from 6 s
  CHECK(render(m.tick(t0 + 8900ms), "stop").empty());
  CHECK(render(m.tick(t0 + 9s), "say") ==
        Strings{"say " + stopped_for_3s("rank 1 on host h1 (a replacement)") +
                " before joining a round; giving it up: killing it to replace it"});
  CHECK(render(m.worker_exited(1, true, 137, killed(1, "h1"), t0 + 9s), "start") ==
        Strings{"start 1 h1 replacement"});
  // The next replacement of slot 1 is watched afresh: not given up at once.
  m.tick(t0 + 9s);
  CHECK(render(m.tick(t0 + 20s), "stop").empty());
  // A member is the heartbeats' (worker_silent), not this watch's.
  m.worker_joined(1);
  m.process_state(1, true, t0 + 21s);
  CHECK(render(m.tick(t0 + 30s), "stop").empty());
}

TEST_CASE("elastic machine: a running replacement is given up only at --start-timeout",
          "[elastic][starters]") {
  ElasticMachine m = machine(watched({1, 3, 10, 600s}), {{"h1", 3}}, {"h1", "h1", "h1"});
  form_round(m);
  m.worker_exited(1, true, 137, killed(1, "h1"), t0);
  m.worker_exited(2, true, 137, killed(2, "h1"), t0);
  m.tick(t0);
  m.worker_arrived(2);  // in hvd.init(), waiting for its round: never given up for time
  CHECK(render(m.tick(t0 + 29s), "stop").empty());  // slow is not dead
  CHECK(render(m.tick(t0 + 30s)) ==
        Strings{"lost 1", "stop 1",
                "say rank 1 on host h1 (a replacement) has not reached hvd.init() within 30 s "
                "(--start-timeout) of its start; giving it up: killing it to replace it"});
  CHECK(render(m.tick(t0 + 600s), "stop").empty());
  // The first workers are the first round's start timeout's.
  ElasticMachine first = machine(watched({1, 2, 10, 600s}), {{"h1", 2}}, {"h1", "h1"});
  CHECK(render(first.tick(t0 + 100s), "stop").empty());
  first.process_state(0, true, t0 + 100s);  // but a stopped one is given up
  CHECK(render(first.tick(t0 + 103s), "stop") == Strings{"stop 0"});
}

TEST_CASE("elastic machine: a spare that does not reach hvd.init() in time is started again",
          "[elastic][spares][starters]") {
  ElasticMachine m = machine(watched({1, 2, 10, 600s, 2}), {{"h1", 2}}, {"h1", "h1"});
  CHECK(render(m.tick(t0), "spare") == Strings{"spare 2 h1", "spare 3 h1"});
  form_round(m);
  m.spare_ready(3);
  Actions out = m.tick(t0 + 30s);
  CHECK(render(out) ==
        Strings{"stop spare 2",
                "say hot spare 2 on host h1 has not reached hvd.init() within 30 s "
                "(--start-timeout) of its start; giving it up: killing it to start another "
                "(reset 1 of 10)",
                "spare 4 h1", "say started hot spare 4 on host h1"});
  // Without limits (0) nothing is given up.
  ElasticMachine off = machine({1, 2, 10, 600s, 1}, {{"h1", 2}}, {"h1", "h1"});
  off.tick(t0);
  off.process_state(2, true, t0);
  CHECK(render(off.tick(t0 + 1h), "stop").empty());
}

}  // namespace hvd::launcher::elastic
