#include "daemon/agent/agent_signals.h"

#include <signal.h>

#include <cerrno>

namespace hvd::daemon {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void block_stop_signals() {
  sigset_t set = stop_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

int wait_for_stop_signal() {
  sigset_t set = stop_signals();
  for (;;) {
    int signo = 0;
    const int rc = ::sigwait(&set, &signo);
    if (rc == 0) return signo;
    if (rc != EINTR) return SIGTERM;  // cannot wait: treat as a stop request
  }
}

}  // namespace hvd::daemon
