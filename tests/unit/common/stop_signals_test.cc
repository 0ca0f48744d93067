#include <pthread.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <thread>

#include "common/stop_signals.h"

using namespace hvd::common;

TEST_CASE("stop_signals is SIGINT, SIGTERM and SIGHUP, nothing else") {
  const sigset_t set = stop_signals();
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) CHECK(sigismember(&set, signo) == 1);
  for (int signo : {SIGKILL, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGSTOP}) {
    CHECK(sigismember(&set, signo) == 0);
  }
}

TEST_CASE("block_stop_signals blocks them in the calling thread, for a wait to take them") {
  // In a thread of its own: the test runner's mask stays as it was.
  int blocked = 0;
  int taken = 0;
  std::thread([&] {
    block_stop_signals();
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) blocked += sigismember(&mask, signo);
    // A blocked SIGHUP sent to this thread stays pending until it is taken.
    pthread_kill(pthread_self(), SIGHUP);
    const sigset_t set = stop_signals();
    const timespec deadline{5, 0};
    taken = sigtimedwait(&set, nullptr, &deadline);
  }).join();
  CHECK(blocked == 3);
  CHECK(taken == SIGHUP);
}
