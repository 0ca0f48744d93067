#include "daemon/agent/proc_state.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/daemon/test_util.h"

using hvd::daemon::parse_proc_stat;
using hvd::daemon::ProcState;
using hvd::daemon::read_proc_state;
using hvd::daemon::test::eventually;
using namespace std::chrono_literals;

TEST_CASE("proc state: the letter after the last parenthesis of /proc/<pid>/stat") {
  CHECK(parse_proc_stat("42 (python3) S 1 42 42 0 -1") == ProcState::kRunning);
  CHECK(parse_proc_stat("42 (python3) R 1") == ProcState::kRunning);
  CHECK(parse_proc_stat("42 (python3) D 1") == ProcState::kRunning);  // I/O: slow, not stopped
  CHECK(parse_proc_stat("42 (python3) I 1") == ProcState::kRunning);
  CHECK(parse_proc_stat("42 (python3) T 1") == ProcState::kStopped);  // SIGSTOP
  CHECK(parse_proc_stat("42 (py thon) t 1") == ProcState::kStopped);  // a tracer's stop
  CHECK(parse_proc_stat("42 (a) T) S 1") == ProcState::kRunning);     // ") T" inside comm
  CHECK(parse_proc_stat("42 (x) Z 1") == ProcState::kGone);           // a zombie
  CHECK(parse_proc_stat("42 (x) X 1") == ProcState::kGone);
  CHECK(parse_proc_stat("") == ProcState::kGone);
  CHECK(parse_proc_stat("42 (x)") == ProcState::kGone);
  CHECK(parse_proc_stat("42 (x) ") == ProcState::kGone);
}

TEST_CASE("proc state: a child stopped, continued, killed and reaped") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (;;) ::pause();
  }
  auto state_is = [&](ProcState want) {
    return eventually([&] { return read_proc_state(pid) == want; }, 5000ms);
  };
  CHECK(state_is(ProcState::kRunning));  // asleep in pause(): running
  ::kill(pid, SIGSTOP);
  CHECK(state_is(ProcState::kStopped));
  ::kill(pid, SIGCONT);
  CHECK(state_is(ProcState::kRunning));
  ::kill(pid, SIGKILL);
  CHECK(state_is(ProcState::kGone));  // a zombie until reaped
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(read_proc_state(pid) == ProcState::kGone);
  CHECK(read_proc_state(::getpid()) == ProcState::kRunning);
}
