#include "daemon/rendezvous/commit_ledger.h"

#include <algorithm>

namespace hvd::daemon {

void CommitLedger::held(int slot, int64_t round, int64_t commit) {
  std::lock_guard lock(mu_);
  if (round >= floor_) record_locked(slot, round, commit);
}

void CommitLedger::restarted(int slot, int64_t round, int64_t start) {
  std::lock_guard lock(mu_);
  if (round < floor_) return;
  // The highest commit of the rounds before this one, and who held it.
  Record before;
  for (auto it = rounds_.begin(); it != rounds_.end() && it->first < round; ++it) {
    if (it->second.commit > before.commit) {
      before = it->second;
    } else if (it->second.commit == before.commit) {
      before.holders.insert(it->second.holders.begin(), it->second.holders.end());
    }
  }
  if (before.commit > start) {
    losses_.push_back(Loss{before.commit,
                           std::vector<int>(before.holders.begin(), before.holders.end()), start,
                           round});
  }
  rounds_.erase(rounds_.begin(), rounds_.lower_bound(round));
  floor_ = round;
  record_locked(slot, round, start);
}

void CommitLedger::record_locked(int slot, int64_t round, int64_t commit) {
  Record& record = rounds_[round];
  if (commit > record.commit) {
    record.commit = commit;
    record.holders = {slot};
  } else if (commit == record.commit) {
    record.holders.insert(slot);
  }
}

std::vector<CommitLedger::Loss> CommitLedger::take_losses() {
  std::lock_guard lock(mu_);
  std::vector<Loss> taken;
  taken.swap(losses_);
  return taken;
}

int64_t CommitLedger::highest() const {
  std::lock_guard lock(mu_);
  int64_t highest = -1;
  for (const auto& [round, record] : rounds_) highest = std::max(highest, record.commit);
  return highest;
}

}  // namespace hvd::daemon
