// daemon/agent/group_reaper.h: when the reaper's parent dies, the groups it was
// told of are killed; a clean stop kills nothing.
#include "daemon/agent/group_reaper.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "daemon/agent/process_groups.h"

namespace hvd::daemon {
namespace {

// A process in a group of its own that sleeps; its pid (= its group).
pid_t sleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  setpgid(pid, pid);
  return pid;
}

// Whether `pid` (our child) ended within `timeout`; reaps it.
bool ended(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("group reaper: a clean stop kills nothing", "[reaper]") {
  const pid_t group = sleeper();
  {
    GroupReaper reaper;
    reaper.add(group);
    CHECK(reaper.pid() > 0);
    reaper.stop();
    CHECK(reaper.pid() == -1);
  }
  CHECK_FALSE(ended(group, std::chrono::milliseconds(300)));
  kill(-group, SIGKILL);
  CHECK(ended(group, std::chrono::seconds(5)));
}

TEST_CASE("group reaper: the groups go when its parent is killed", "[reaper]") {
  // The parent (a forked copy of this test) starts a sleeper in a group,
  // hands it to a reaper, writes the sleeper's pid and waits to be killed.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t parent = fork();
  if (parent == 0) {
    close(fds[0]);
    const pid_t group = sleeper();
    GroupReaper reaper;
    reaper.add(group);
    const pid_t other = sleeper();  // added, then gone: not killed twice
    reaper.add(other);
    kill(-other, SIGKILL);
    waitpid(other, nullptr, 0);
    reaper.remove(other);
    [[maybe_unused]] ssize_t n = write(fds[1], &group, sizeof(group));
    pause();
    _exit(0);
  }
  close(fds[1]);
  pid_t group = -1;
  REQUIRE(read(fds[0], &group, sizeof(group)) == static_cast<ssize_t>(sizeof(group)));
  close(fds[0]);
  REQUIRE(kill(-group, 0) == 0);  // the sleeper runs
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  // The sleeper was the parent's child: reparented, it may stay a zombie
  // until init reaps it, which counts as gone.
  CHECK(wait_groups_gone({group}, std::chrono::seconds(5)).empty());
}

}  // namespace hvd::daemon
