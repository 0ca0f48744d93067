#include "launcher/state_loss.h"

#include "common/printable.h"

namespace hvd::launcher {

namespace {

constexpr const char* kKey = "on_state_loss";

std::string holders_of(const daemon::CommitLedger::Loss& loss) {
  if (loss.holders.empty()) return "";
  std::string list;
  for (int slot : loss.holders) list += (list.empty() ? "" : ", ") + std::to_string(slot);
  return std::string(loss.holders.size() == 1 ? ", held by rank " : ", held by ranks ") + list;
}

}  // namespace

common::Result<OnStateLoss> on_state_loss(const config::Settings& settings) {
  const std::string& value = settings.get(kKey);
  if (value == "restart") return OnStateLoss::kRestart;
  if (value == "fail") return OnStateLoss::kFail;
  return common::invalid_argument(std::string(settings.source_of(kKey)) + ": '" +
                                  common::printable(value) + "' is not restart or fail");
}

std::string describe_loss(const daemon::CommitLedger::Loss& loss, OnStateLoss policy) {
  std::string text = "commit " + std::to_string(loss.commit) + " (the last" + holders_of(loss) +
                     ") was lost with " + (loss.holders.size() == 1 ? "it" : "them");
  if (policy == OnStateLoss::kFail) return text + "; ending the job (--on-state-loss fail)";
  return text + "; the job starts again from commit " + std::to_string(loss.restart) +
         (loss.restart == 0 ? " (the start)" : "");
}

}  // namespace hvd::launcher
