#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "daemon/agent/containment.h"
#include "daemon/agent/proc_state.h"
#include "daemon/agent/supervisor.h"
#include "tests/unit/daemon/test_util.h"

using namespace std::chrono_literals;
using hvd::common::StatusCode;
using hvd::daemon::ProcessEvent;
using hvd::daemon::ProcState;
using hvd::daemon::read_proc_state;
using hvd::common::ProcessSpec;
using hvd::daemon::Supervisor;
using hvd::daemon::test::EventLog;
using hvd::daemon::test::eventually;
using hvd::daemon::test::process_gone;
using hvd::daemon::test::spec_of;

namespace {

// A fresh directory under /tmp, removed at the end of the test.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/hvd-daemon-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

int64_t spawn_ok(Supervisor& sup, const ProcessSpec& spec) {
  auto pid = sup.spawn(spec);
  INFO(pid.status().to_string());
  REQUIRE(pid.is_ok());
  return pid.value();
}

}  // namespace

TEST_CASE("Supervisor captures stdout and stderr lines in order with the rank") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(
      sup, spec_of({"sh", "-c", "echo one; echo err1 >&2; echo two; echo err2 >&2; printf tail"},
                   5));
  REQUIRE(log.wait_exits(1));
  CHECK(log.lines(pid, false) == std::vector<std::string>{"one", "two", "tail"});
  CHECK(log.lines(pid, true) == std::vector<std::string>{"err1", "err2"});
  for (const auto& e : log.events()) CHECK(e.rank == 5);
  auto exit = log.exit_of(pid);
  CHECK(exit.exit_code == 0);
  CHECK(exit.signal == 0);
}

TEST_CASE("Supervisor reports exit codes and the signal that ended a process") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t three = spawn_ok(sup, spec_of({"sh", "-c", "exit 3"}));
  const int64_t killed = spawn_ok(sup, spec_of({"sh", "-c", "kill -9 $$"}));
  REQUIRE(log.wait_exits(2));
  CHECK(log.exit_of(three).kind == ProcessEvent::Kind::kExit);
  CHECK(log.exit_of(three).exit_code == 3);
  CHECK(log.exit_of(three).signal == 0);
  CHECK(log.exit_of(killed).signal == SIGKILL);
  CHECK(sup.running() == 0);
}

TEST_CASE("Supervisor delivers all output of a process before its exit event") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid =
      spawn_ok(sup, spec_of({"sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo line$i; "
                                         "i=$((i+1)); done; printf 'no newline'"}));
  REQUIRE(log.wait_exits(1, 10000ms));
  auto events = log.events();
  REQUIRE(events.size() == 3002);
  CHECK(events.back().kind == ProcessEvent::Kind::kExit);
  CHECK(events[0].text == "line0");
  CHECK(events[2999].text == "line2999");
  CHECK(events[3000].text == "no newline");
  CHECK(events.back().pid == pid);
}

TEST_CASE("Supervisor reads no pipe while the sink has no room: the process waits, alive") {
  std::atomic<bool> room{false};
  EventLog log;
  Supervisor sup(log.sink(), [&] { return room.load(); });
  // About 1.3 MB of lines, far more than a pipe holds.
  const int64_t pid = spawn_ok(sup, spec_of({"sh", "-c", "seq 1 200000; printf end"}));
  std::this_thread::sleep_for(600ms);  // more than a state sample
  CHECK(log.events().empty());         // no line, no exit, no "stopped"
  CHECK(read_proc_state(pid) == ProcState::kRunning);  // blocked in write: alive

  room = true;
  sup.output_waker()();
  REQUIRE(log.wait_exits(1, 20000ms));
  const auto lines = log.lines(pid, false);
  REQUIRE(lines.size() == 200001);
  bool in_order = true;
  for (size_t i = 0; i < 200000; ++i) in_order = in_order && lines[i] == std::to_string(i + 1);
  CHECK(in_order);
  CHECK(lines.back() == "end");
  CHECK(log.events().back().kind == ProcessEvent::Kind::kExit);
}

TEST_CASE("Supervisor says when a process stops and when it runs again") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({"sleep", "30"}, 4));
  auto states = [&] {
    std::vector<bool> out;
    for (const auto& e : log.events()) {
      if (e.kind == ProcessEvent::Kind::kState && e.pid == pid && e.rank == 4) {
        out.push_back(e.stopped);
      }
    }
    return out;
  };
  std::this_thread::sleep_for(Supervisor::kStateSample * 3);
  CHECK(states().empty());  // it runs from the start: no event
  ::kill(static_cast<pid_t>(pid), SIGSTOP);
  CHECK(eventually([&] { return states() == std::vector<bool>{true}; }, 3000ms));
  ::kill(static_cast<pid_t>(pid), SIGCONT);
  CHECK(eventually([&] { return states() == std::vector<bool>{true, false}; }, 3000ms));
  ::kill(static_cast<pid_t>(pid), SIGSTOP);
  CHECK(eventually([&] { return states() == std::vector<bool>{true, false, true}; }, 3000ms));
  ::kill(static_cast<pid_t>(pid), SIGKILL);  // a stopped process dies of SIGKILL
  REQUIRE(log.wait_exits(1));
  const auto events = log.events();
  CHECK(events.back().kind == ProcessEvent::Kind::kExit);  // its states came before its exit
  CHECK(events.back().signal == SIGKILL);
}

TEST_CASE("Supervisor splits lines longer than 64 KiB") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid =
      spawn_ok(sup, spec_of({"sh", "-c", "head -c 150000 /dev/zero | tr '\\0' x; echo; echo end"}));
  REQUIRE(log.wait_exits(1));
  auto lines = log.lines(pid, false);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == std::string(65536, 'x'));
  CHECK(lines[1] == std::string(65536, 'x'));
  CHECK(lines[2] == std::string(150000 - 2 * 65536, 'x'));
  CHECK(lines[3] == "end");
}

TEST_CASE("Supervisor refuses commands it cannot run, without forking") {
  EventLog log;
  Supervisor sup(log.sink());
  auto missing = sup.spawn(spec_of({"hvd-no-such-command-x1"}));
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "cannot execute 'hvd-no-such-command-x1': command not found");

  auto missing_path = sup.spawn(spec_of({"/nonexistent/hvd-tool"}));
  CHECK(missing_path.status().code() == StatusCode::kNotFound);

  TempDir dir;
  const std::string plain = dir.path + "/not-executable";
  std::ofstream(plain) << "echo hi\n";
  ::chmod(plain.c_str(), 0644);
  auto denied = sup.spawn(spec_of({plain}));
  CHECK(denied.status().code() == StatusCode::kFailedPrecondition);
  CHECK(denied.status().message() == "cannot execute '" + plain + "': permission denied");

  // Found through PATH but not executable.
  auto spec = spec_of({"not-executable"});
  spec.env["PATH"] = dir.path;
  CHECK(sup.spawn(spec).status().code() == StatusCode::kFailedPrecondition);

  CHECK(sup.spawn(spec_of({})).status().code() == StatusCode::kInvalidArgument);
  auto bad_cwd = spec_of({"true"});
  bad_cwd.cwd = dir.path + "/absent";
  CHECK(sup.spawn(bad_cwd).status().code() == StatusCode::kNotFound);
  CHECK(sup.running() == 0);
  CHECK(log.events().empty());
}

TEST_CASE("Supervisor reports an exec failure in the child as output and exit code 127") {
  TempDir dir;
  const std::string garbage = dir.path + "/garbage";
  std::ofstream(garbage) << "\x01\x02\x03\x04 not a program";
  ::chmod(garbage.c_str(), 0755);
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({garbage}));
  REQUIRE(log.wait_exits(1));
  CHECK(log.exit_of(pid).exit_code == 127);
  auto err = log.lines(pid, true);
  REQUIRE(err.size() == 1);
  CHECK(err[0] == "hvd: cannot execute '" + garbage + "': Exec format error");
}

TEST_CASE("Supervisor gives the child exactly the environment it was given") {
  EventLog log;
  Supervisor sup(log.sink());
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env = {{"HVD_A", "1"}, {"HVD_B", "two words"}, {"EMPTY", ""}};
  const int64_t pid = spawn_ok(sup, spec);
  REQUIRE(log.wait_exits(1));
  auto lines = log.lines(pid, false);
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{"EMPTY=", "HVD_A=1", "HVD_B=two words"});
}

TEST_CASE("Supervisor runs the child in the working directory given") {
  TempDir dir;
  EventLog log;
  Supervisor sup(log.sink());
  auto spec = spec_of({"pwd"});
  spec.cwd = dir.path;
  spec.env["PWD"] = "/";  // pwd must not trust it
  const int64_t pid = spawn_ok(sup, spec);
  REQUIRE(log.wait_exits(1));
  CHECK(log.lines(pid, false) ==
        std::vector<std::string>{std::filesystem::canonical(dir.path).string()});
}

TEST_CASE("Supervisor leaks no descriptors into children") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({"ls", "/proc/self/fd"}));
  REQUIRE(log.wait_exits(1));
  auto fds = log.lines(pid, false);
  // 0, 1, 2 and the directory ls itself reads.
  CHECK(fds.size() == 4);
  for (const auto& fd : fds) CHECK(std::atoi(fd.c_str()) <= 3);
}

TEST_CASE("Supervisor terminate_all ends a process with SIGTERM") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({"sleep", "100"}));
  CHECK(sup.running() == 1);
  const auto start = std::chrono::steady_clock::now();
  CHECK(sup.terminate_all(3000ms) == 0);
  CHECK(std::chrono::steady_clock::now() - start < 1500ms);
  REQUIRE(log.wait_exits(1));
  CHECK(log.exit_of(pid).signal == SIGTERM);
  CHECK(sup.running() == 0);
  CHECK(sup.terminate_all(100ms) == 0);  // nothing left
}

TEST_CASE("Supervisor terminate_all SIGKILLs a process that ignores SIGTERM") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid =
      spawn_ok(sup, spec_of({"sh", "-c", "trap '' TERM; echo ready; sleep 100; echo survived"}));
  REQUIRE(log.wait_line("ready"));
  const auto start = std::chrono::steady_clock::now();
  CHECK(sup.terminate_all(300ms) == 1);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 1500ms);
  REQUIRE(log.wait_exits(1));
  CHECK(log.exit_of(pid).signal == SIGKILL);
  CHECK(log.lines(pid, false) == std::vector<std::string>{"ready"});
}

TEST_CASE("Supervisor terminate_all reaches grandchildren in the group") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({"sh", "-c", "sleep 100 & echo $!; wait"}));
  REQUIRE(eventually([&] { return !log.lines(pid, false).empty(); }));
  const int64_t grandchild = std::atoll(log.lines(pid, false).at(0).c_str());
  REQUIRE(grandchild > 0);
  CHECK(sup.terminate_all(3000ms) == 0);
  REQUIRE(log.wait_exits(1));
  CHECK(eventually([&] { return process_gone(grandchild); }));
}

TEST_CASE("Supervisor terminate_all reaches a group whose leader was already reaped") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t pid = spawn_ok(sup, spec_of({"sh", "-c", "sleep 100 & echo $!"}));
  REQUIRE(log.wait_exits(1));
  CHECK(log.exit_of(pid).exit_code == 0);
  const int64_t grandchild = std::atoll(log.lines(pid, false).at(0).c_str());
  REQUIRE(grandchild > 0);
  if (!hvd::daemon::current_containment().cgroup) {
    // A keeper (containment.h) ends what its worker left as the worker exits.
    CHECK(process_gone(grandchild));
    return;
  }
  CHECK_FALSE(process_gone(grandchild));
  CHECK(sup.running() == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(sup.terminate_all(3000ms) == 0);
  CHECK(std::chrono::steady_clock::now() - start < 1500ms);
  CHECK(eventually([&] { return process_gone(grandchild); }));
}

TEST_CASE("Supervisor signal_all delivers a signal to every group") {
  EventLog log;
  Supervisor sup(log.sink());
  const int64_t a = spawn_ok(sup, spec_of({"sleep", "100"}, 0));
  const int64_t b = spawn_ok(sup, spec_of({"sleep", "100"}, 1));
  sup.signal_all(SIGINT);
  REQUIRE(log.wait_exits(2));
  CHECK(log.exit_of(a).signal == SIGINT);
  CHECK(log.exit_of(b).signal == SIGINT);
}

TEST_CASE("Supervisor leaves no zombie and its destructor kills what still runs") {
  int64_t done = 0;
  int64_t running = 0;
  {
    EventLog log;
    Supervisor sup(log.sink());
    done = spawn_ok(sup, spec_of({"true"}));
    REQUIRE(log.wait_exits(1));
    // Reaped already: neither a zombie nor our child any more.
    CHECK(::waitpid(static_cast<pid_t>(done), nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
    CHECK(eventually([&] { return ::kill(static_cast<pid_t>(done), 0) != 0; }));
    running = spawn_ok(sup, spec_of({"sh", "-c", "trap '' TERM; sleep 100"}));
  }
  CHECK(::kill(static_cast<pid_t>(running), 0) == -1);
  CHECK(errno == ESRCH);
}
