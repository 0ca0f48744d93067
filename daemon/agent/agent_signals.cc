#include "daemon/agent/agent_signals.h"

#include <signal.h>

#include <cerrno>

#include "common/stop_signals.h"

namespace hvd::daemon {

void block_stop_signals() {
  common::block_stop_signals();
  ::signal(SIGPIPE, SIG_IGN);
}

int wait_for_stop_signal() {
  const sigset_t set = common::stop_signals();
  for (;;) {
    int signo = 0;
    const int rc = ::sigwait(&set, &signo);
    if (rc == 0) return signo;
    if (rc != EINTR) return SIGTERM;  // cannot wait: treat as a stop request
  }
}

}  // namespace hvd::daemon
