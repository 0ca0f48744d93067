// What hvdrun does when an elastic job lost the last commit of its state
// (docs/elastic.md, "Lost state"): every worker that held it died, and a
// round restarted from an older commit (daemon/rendezvous/commit_ledger.h).
// The `on_state_loss` setting (--on-state-loss, HVD_ON_STATE_LOSS):
// restart (the default) says so in one warning and goes on; fail ends the
// job with that line as its error, exit code 1 (launcher/exit_codes.h).
#pragma once

#include <string>

#include "common/status.h"
#include "config/settings.h"
#include "daemon/rendezvous/commit_ledger.h"

namespace hvd::launcher {

enum class OnStateLoss { kRestart, kFail };

// The setting; kInvalidArgument naming where it came from and the bad
// value (a usage error).
common::Result<OnStateLoss> on_state_loss(const config::Settings& settings);

// "commit 12 (the last, held by ranks 0, 1) was lost with them", then
// restart: "; the job starts again from commit 0 (the start)";
// fail: "; ending the job (--on-state-loss fail)".
std::string describe_loss(const daemon::CommitLedger::Loss& loss, OnStateLoss policy);

}  // namespace hvd::launcher
