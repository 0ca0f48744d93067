// The signals that stop hvd-agent (common/stop_signals.h: SIGTERM, SIGINT,
// SIGHUP). main() blocks them before any thread starts (gRPC's included), so every thread inherits
// the mask and only wait_for_stop_signal() ever takes them. Workers start
// with every signal unblocked and at its default (child_process.cc).
#pragma once

namespace hvd::daemon {

// Blocks the stop signals in the calling thread (and so in threads it starts
// later) and ignores SIGPIPE (a closed stderr must not kill the agent).
void block_stop_signals();

// Waits for one of the stop signals; returns its number.
int wait_for_stop_signal();

}  // namespace hvd::daemon
