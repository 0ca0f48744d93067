// Whether a process runs, is stopped or is gone, from the state letter of
// /proc/<pid>/stat (proc(5)): T (stopped by a signal: SIGSTOP, SIGTSTP...)
// and t (stopped by a tracer) are stopped; Z (a zombie not reaped yet), X
// and a missing file are gone; every other letter (R, S, D, I, ...) runs —
// a process that sleeps or waits for I/O is alive, however slow. The agent
// samples its workers with it (supervisor.h) so that hvdrun learns of a
// stopped worker or spare before it ever sends a heartbeat.
#pragma once

#include <sys/types.h>

#include <string_view>

namespace hvd::daemon {

enum class ProcState { kRunning, kStopped, kGone };

const char* proc_state_name(ProcState state);

// The state in the text of a /proc/<pid>/stat file ("pid (comm) S ..."; comm
// may hold spaces and parentheses: the state follows the last ')').
// kGone when the text has no state.
ProcState parse_proc_stat(std::string_view stat);

// The state of `pid` now.
ProcState read_proc_state(pid_t pid);

}  // namespace hvd::daemon
