#include "daemon/rendezvous/worker_rights.h"

#include "common/printable.h"
#include "daemon/rendezvous/round_keys.h"

namespace hvd::daemon {

void WorkerRights::set_slots(int slots) {
  std::lock_guard lock(mu_);
  slots_ = slots;
}

void WorkerRights::joined(int slot, int64_t round) {
  std::lock_guard lock(mu_);
  rounds_[slot] = round;
  barred_.erase(slot);
}

void WorkerRights::refused(const Caller& caller, size_t bytes, const std::string& why) {
  if (caller.job() || bytes <= kLargeWriteBytes) return;
  const std::optional<int> slot = slot_of(caller);
  if (!slot) return;
  std::lock_guard lock(mu_);
  barred_.emplace(*slot, "the Set calls of slot " + std::to_string(*slot) +
                             " are refused until it joins another round: a Set of " +
                             std::to_string(bytes) + " bytes was refused (" + why + ")");
}

std::optional<std::string> WorkerRights::barred(const Caller& caller) const {
  if (caller.job()) return std::nullopt;
  const std::optional<int> slot = slot_of(caller);
  if (!slot) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = barred_.find(*slot);
  if (it == barred_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> WorkerRights::slot_of(const Caller& caller) const {
  if (caller.job()) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    if (caller.id < slots_) return caller.id;
  }
  return spares_.promoted_slot(caller.id);
}

std::string WorkerRights::who(const Caller& caller) const {
  {
    std::lock_guard lock(mu_);
    if (caller.id < slots_) return "slot " + std::to_string(caller.id);
  }
  auto slot = spares_.promoted_slot(caller.id);
  return "spare " + std::to_string(caller.id) +
         (slot ? " (promoted into slot " + std::to_string(*slot) + ")" : " (not promoted)");
}

std::optional<std::string> WorkerRights::acts_for(const Caller& caller, int slot,
                                                  const char* what) const {
  if (caller.job() || slot_of(caller) == slot) return std::nullopt;
  return "the credential of " + who(caller) + " may " + what + " only for its own slot, not for " +
         (slot < 0 ? "an unassigned rank" : "slot " + std::to_string(slot));
}

std::optional<std::string> WorkerRights::may_join(const Caller& caller, int rank) const {
  return acts_for(caller, rank, "join");
}

std::optional<std::string> WorkerRights::may_heartbeat(const Caller& caller, int rank) const {
  return acts_for(caller, rank, "send heartbeats");
}

std::optional<std::string> WorkerRights::may_await_promotion(const Caller& caller,
                                                             int spare) const {
  if (caller.job() || caller.id == spare) return std::nullopt;
  return "the credential of " + who(caller) + " may not wait for the promotion of spare " +
         std::to_string(spare);
}

std::optional<std::string> WorkerRights::may_write(const Caller& caller,
                                                   std::string_view key) const {
  if (caller.job()) return std::nullopt;
  const std::optional<int> slot = slot_of(caller);
  std::optional<int64_t> round;
  if (slot) {
    std::lock_guard lock(mu_);
    if (auto it = rounds_.find(*slot); it != rounds_.end()) round = it->second;
  }
  const std::string quoted = "'" + common::printable(key.substr(0, 256)) + "'";
  if (!round) {
    return "the credential of " + who(caller) + " may write no key before its slot has joined " +
           "a round (" + quoted + ")";
  }
  const std::string prefix = round_key_prefix(*round);
  if (key.substr(0, prefix.size()) != prefix) {
    return "the credential of " + who(caller) + " may write only keys of its round, under '" +
           prefix + "', not " + quoted;
  }
  if (key == round_lost_key(*round)) {
    return quoted + " is the rendezvous service's own key: no worker may write it";
  }
  return std::nullopt;
}

}  // namespace hvd::daemon
