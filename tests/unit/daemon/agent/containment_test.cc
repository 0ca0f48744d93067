// Issue 29: every process a job starts ends with the job, whatever it does
// (tests/integration/workers/leave_children.sh: a child in the worker's
// group, nohup, one ignoring SIGTERM, setsid, a new session with a child,
// a daemon), in both containments (daemon/agent/containment.h): a cgroup
// per job where this machine allows one (skipped with a warning saying why
// otherwise), and keepers (subreapers, common/child_keeper.h) always.
// hvd-agent killed with SIGKILL or cut off from its launcher:
// agent_binary_test.cc; hvdrun's ways of ending: test_containment.py.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/agent/containment.h"
#include "daemon/agent/job_cgroup.h"
#include "daemon/agent/supervisor.h"
#include "tests/unit/daemon/agent/containment_util.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::daemon::Containment;
using hvd::daemon::ContainmentMode;
using hvd::daemon::JobCgroup;
using hvd::daemon::ProcessEvent;
using hvd::daemon::Supervisor;
using hvd::daemon::test::check_none_left;
using hvd::daemon::test::ContainmentScope;
using hvd::daemon::test::containments;
using hvd::daemon::test::EventLog;
using hvd::daemon::test::kChildKinds;
using hvd::daemon::test::leave_children;
using hvd::daemon::test::left_of_kind;
using hvd::daemon::test::unique_token;
using hvd::daemon::test::value_of;

namespace {

// /proc/<pid>/stat field `n` (3 = state, 4 = ppid, 5 = pgrp).
std::string stat_field(pid_t pid, int n) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= n; ++i) fields >> field;
  return field;
}

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

int lines_equal(EventLog& log, const std::string& text) {
  int n = 0;
  for (const auto& e : log.events()) n += e.kind == ProcessEvent::Kind::kOutput && e.text == text;
  return n;
}

// Two leave_children.sh workers: rank 0 does `action0`, rank 1 sleeps;
// returns once both said that their children run.
void start_two(Supervisor& sup, EventLog& log, const std::string& token,
               const std::string& action0) {
  REQUIRE(sup.spawn(leave_children(token, 0, action0)).is_ok());
  REQUIRE(sup.spawn(leave_children(token, 1, "sleep")).is_ok());
  REQUIRE(hvd::daemon::test::eventually(
      [&] { return lines_equal(log, "children up: 6") == 2; }, 60s));
}

// Runs `body` once per containment to test, made this process's, with a
// fresh token.
void in_each_containment(
    const std::function<void(const Containment&, const std::string& token)>& body) {
  for (const Containment& containment : containments()) {
    INFO("containment: " << containment.describe());
    ContainmentScope scope(containment);
    body(containment, unique_token());
  }
}

}  // namespace

TEST_CASE("containment: every kind of child ends with the job", "[containment]") {
  in_each_containment([](const Containment& containment, const std::string& token) {
    {
      EventLog log;
      Supervisor sup(log.sink());
      // Rank 0 exits at once, rank 1 sleeps until the job ends.
      start_two(sup, log, token, "exit:0");
      REQUIRE(log.wait_exits(1, 60s));
      if (!containment.cgroup) {
        // A keeper ends its worker's children when the worker exits.
        CHECK(hvd::daemon::test::eventually(
            [&] { return left_of_kind(token + "-0", "").empty(); }, 15s));
      }
    }  // the job ends: its Supervisor goes
    check_none_left(token, 15s);
  });
}

TEST_CASE("containment: terminate_all ends every kind of child", "[containment]") {
  in_each_containment([](const Containment&, const std::string& token) {
    EventLog log;
    Supervisor sup(log.sink());
    start_two(sup, log, token, "sleep");
    REQUIRE(hvd::daemon::test::eventually(
        [&] { return left_of_kind(token, "").size() == 2 * std::size(kChildKinds); }, 15s));
    sup.terminate_all(1s);
    check_none_left(token, 15s);
    CHECK(log.wait_exits(2));
  });
}

TEST_CASE("containment: a keeper is its worker's parent and exits as the worker did",
          "[containment]") {
  ContainmentScope scope(value_of(
      hvd::daemon::detect_containment(ContainmentMode::kSubreaper, "--containment ")));
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid =
      value_of(sup.spawn(hvd::daemon::test::spec_of({"sh", "-c", "echo $$; sleep 30"})));
  REQUIRE(log.wait_line(std::to_string(pid)));  // the pid reported is the command's
  const pid_t keeper = static_cast<pid_t>(std::stol(stat_field(static_cast<pid_t>(pid), 4)));
  CHECK(keeper != ::getpid());
  CHECK(comm_of(keeper) == "hvd-keeper");
  CHECK(stat_field(keeper, 4) == std::to_string(::getpid()));
  CHECK(stat_field(static_cast<pid_t>(pid), 5) == std::to_string(pid));  // its own group
  CHECK(stat_field(keeper, 5) == std::to_string(keeper));  // apart from the worker's
  CHECK(sup.signal_rank(0, SIGTERM));
  REQUIRE(log.wait_exits(1));
  CHECK(log.exit_of(pid).signal == SIGTERM);
  CHECK(hvd::daemon::test::process_gone(keeper));

  const int64_t three = value_of(sup.spawn(hvd::daemon::test::spec_of({"sh", "-c", "exit 3"})));
  const int64_t killed =
      value_of(sup.spawn(hvd::daemon::test::spec_of({"sh", "-c", "kill -9 $$"})));
  REQUIRE(log.wait_exits(3));
  CHECK(log.exit_of(three).exit_code == 3);
  CHECK(log.exit_of(three).signal == 0);
  CHECK(log.exit_of(killed).signal == SIGKILL);
}

TEST_CASE("containment: modes and what they say", "[containment]") {
  using hvd::daemon::parse_containment_mode;
  CHECK(value_of(parse_containment_mode("auto")) == ContainmentMode::kAuto);
  CHECK(value_of(parse_containment_mode("cgroup")) == ContainmentMode::kCgroup);
  CHECK(value_of(parse_containment_mode("subreaper")) == ContainmentMode::kSubreaper);
  auto bad = parse_containment_mode("cgroups");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() == "'cgroups': expected auto, cgroup or subreaper");

  auto subreaper =
      value_of(hvd::daemon::detect_containment(ContainmentMode::kSubreaper, "HVD_CONTAINMENT="));
  CHECK_FALSE(subreaper.cgroup);
  CHECK(subreaper.describe() == "subreaper (HVD_CONTAINMENT=subreaper)");

  auto automatic = value_of(hvd::daemon::detect_containment(ContainmentMode::kAuto, ""));
  auto required = hvd::daemon::detect_containment(ContainmentMode::kCgroup, "--containment ");
  CHECK(automatic.cgroup == required.is_ok());
  if (automatic.cgroup) {
    CHECK_THAT(automatic.describe(), Catch::StartsWith("cgroup (a cgroup v2 per job in /"));
  } else {
    CHECK_THAT(automatic.describe(), Catch::StartsWith("subreaper (cgroup v2 cannot be used: "));
    CHECK_THAT(required.status().message(),
               Catch::StartsWith("--containment cgroup: cgroup v2 cannot be used: "));
  }
}

TEST_CASE("containment: the cgroups of gone hvd processes are killed and removed",
          "[containment]") {
  auto required = hvd::daemon::detect_containment(ContainmentMode::kCgroup, "");
  if (!required.is_ok()) {
    WARN("skipped: " << required.status().message());
    return;
  }
  // A pid that ran and is gone: its cgroup is stale.
  const pid_t gone = ::fork();
  if (gone == 0) _exit(0);
  REQUIRE(::waitpid(gone, nullptr, 0) == gone);
  const std::string name = "hvd." + std::to_string(gone) + ".1.0";
  const std::string stale = required->cgroup_parent + "/" + name;
  auto cgroup = value_of(JobCgroup::create(required->cgroup_parent, name));
  // A process in it, as a worker's orphan would be.
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    if (::write(cgroup->procs_fd(), "0", 1) != 1) _exit(1);
    ::execlp("sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  REQUIRE(hvd::daemon::test::eventually([&] { return cgroup->populated(); }));
  // Ours (a live maker) are kept; the stale one goes, with its process.
  auto ours = value_of(JobCgroup::create(required->cgroup_parent,
                                         hvd::daemon::own_cgroup_prefix() + "test"));
  CHECK(hvd::daemon::remove_stale_cgroups(required->cgroup_parent) >= 1);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(ours->path()));
  int status = 0;
  REQUIRE(::waitpid(sleeper, &status, 0) == sleeper);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}
