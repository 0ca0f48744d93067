// The signals that ask hvdrun and hvd-agent to stop: SIGINT, SIGTERM and
// SIGHUP, declared once. Each process blocks them in main() before any
// thread starts (gRPC's included), so every thread inherits the mask and
// only the one thread that waits for them (sigwait, sigtimedwait) takes them:
// hvd-agent's main thread (daemon/agent/agent_signals.h), hvdrun's signal
// watcher (launcher/signal_watcher.h). Workers start with every signal
// unblocked and at its default (child_process.cc).
#pragma once

#include <signal.h>

namespace hvd::common {

// SIGINT, SIGTERM and SIGHUP.
sigset_t stop_signals();

// Blocks the stop signals in the calling thread (and so in the threads it
// starts later).
void block_stop_signals();

}  // namespace hvd::common
