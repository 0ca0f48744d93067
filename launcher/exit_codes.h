// Exit codes of hvdrun. A script that runs hvdrun can tell from the code
// alone why the job ended:
//
//   0        every worker exited with code 0 (also --help and --version)
//   1        hvdrun itself failed: a service could not start, an agent could
//            not be reached, refused the credentials or was lost; or, with
//            --on-state-loss fail, an elastic job lost the last commit of its
//            state (every worker holding it died)
//   2        usage error: bad flag, bad -H/--hostfile, bad tunable value, -np
//            larger than the slots or the limits (common/job_limits.h),
//            missing command, a remote host without --secret-file, an
//            unusable secret or TLS file, a --network-interface no host has;
//            nothing started
//   124      the rendezvous timed out: a rank never called hvd.init() within
//            --start-timeout seconds of the first rank's
//   125      a worker stopped responding: no heartbeat for
//            --heartbeat-timeout-seconds (its process stopped, its host hung)
//   126      the command was found but cannot be executed (permission denied)
//   127      the command was not found
//   1..255   otherwise: the exit code of the first worker that failed
//   128+N    the first failing worker was killed by signal N (137 for SIGKILL),
//            or hvdrun itself received signal N (130 SIGINT, 143 SIGTERM,
//            129 SIGHUP) and terminated the workers
#pragma once

namespace hvd::launcher::exit_code {

inline constexpr int kSuccess = 0;
inline constexpr int kInternalError = 1;
inline constexpr int kAgentFailure = 1;  // unreachable, refusing or lost agent
inline constexpr int kStateLost = 1;      // --on-state-loss fail
inline constexpr int kUsage = 2;
inline constexpr int kRendezvousTimeout = 124;
inline constexpr int kWorkerUnresponsive = 125;
inline constexpr int kCannotExecute = 126;
inline constexpr int kCommandNotFound = 127;
inline constexpr int kSignalBase = 128;

}  // namespace hvd::launcher::exit_code
