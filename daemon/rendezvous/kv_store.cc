#include "daemon/rendezvous/kv_store.h"

#include <algorithm>
#include <charconv>
#include <memory>

#include "common/printable.h"

namespace hvd::daemon {

namespace {

size_t entry_bytes(const std::string& key, size_t value_bytes) {
  return key.size() + value_bytes + KvStore::kEntryBytes;
}

// OK when `held` grown by `bytes` and `keys` stays within `quota`; else
// kFailedPrecondition naming the quota ("the store quota of a slot").
Status within(const std::string& whose, const KvStore::Usage& held, size_t bytes, size_t keys,
              const KvStore::Quota& quota, const char* of) {
  if (quota.bytes > 0 && held.bytes + bytes > quota.bytes) {
    return common::failed_precondition(
        whose + " would take " + std::to_string(held.bytes + bytes) +
        " bytes of the rendezvous store, over the store quota " + of + " (" +
        std::to_string(quota.bytes) + " bytes)");
  }
  if (quota.keys > 0 && held.keys + keys > quota.keys) {
    return common::failed_precondition(whose + " would be " + std::to_string(held.keys + keys) +
                                       " keys, over the store quota " + of + " (" +
                                       std::to_string(quota.keys) + " keys)");
  }
  return Status::ok();
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

}  // namespace

void KvStore::set_quotas(Quota job, Quota per_slot) {
  std::lock_guard lock(mu_);
  job_quota_ = job;
  slot_quota_ = per_slot;
}

KvStore::Usage KvStore::usage() const {
  std::lock_guard lock(mu_);
  return total_;
}

KvStore::Usage KvStore::usage_of(int owner) const {
  std::lock_guard lock(mu_);
  auto it = owned_.find(owner);
  return it == owned_.end() ? Usage{} : it->second;
}

Status KvStore::admit_locked(int writer, const std::string& key, const Entry* entry,
                             size_t value_bytes) const {
  if (closed_) return {common::StatusCode::kCancelled, "key-value store is closed"};
  const int owner = entry != nullptr ? entry->owner : writer;
  if (writer != kJob && owner != writer) {
    return {common::StatusCode::kUnauthenticated,
            "key '" + common::printable(key.substr(0, 256)) + "' belongs to " +
                (owner == kJob ? std::string("the job") : "slot " + std::to_string(owner)) +
                ": slot " + std::to_string(writer) + " may change only keys it wrote"};
  }
  const size_t old_bytes = entry != nullptr ? entry_bytes(key, entry->value.size()) : 0;
  const size_t new_bytes = entry_bytes(key, value_bytes);
  if (new_bytes <= old_bytes && entry != nullptr) return Status::ok();  // it does not grow
  const size_t grows = new_bytes - old_bytes;
  const size_t new_keys = entry != nullptr ? 0 : 1;
  if (writer != kJob) {  // then the owner
    auto it = owned_.find(owner);
    const Usage held = it == owned_.end() ? Usage{} : it->second;
    const std::string whose = "slot " + std::to_string(owner) + "'s keys";
    HVD_RETURN_IF_ERROR(within(whose, held, grows, new_keys, slot_quota_, "of a slot"));
  }
  return within("the job's keys", total_, grows, new_keys, job_quota_, "of the job");
}

void KvStore::account_locked(int owner, const std::string& key, size_t old_value_bytes,
                             bool existed, size_t new_value_bytes, bool exists) {
  const size_t old_bytes = existed ? entry_bytes(key, old_value_bytes) : 0;
  const size_t new_bytes = exists ? entry_bytes(key, new_value_bytes) : 0;
  Usage& mine = owned_[owner];
  for (Usage* u : {&mine, &total_}) {
    u->bytes = u->bytes - old_bytes + new_bytes;
    u->keys = u->keys - (existed ? 1 : 0) + (exists ? 1 : 0);
  }
  if (mine.keys == 0) owned_.erase(owner);
}

Status KvStore::set(const std::string& key, const std::string& value) {
  return set_by(kJob, key, value);
}

Status KvStore::put_locked(int writer, const std::string& key, std::string value) {
  auto it = values_.find(key);
  const Entry* entry = it == values_.end() ? nullptr : &it->second;
  HVD_RETURN_IF_ERROR(admit_locked(writer, key, entry, value.size()));
  if (entry == nullptr) {
    account_locked(writer, key, 0, false, value.size(), true);
    values_.emplace(key, Entry{std::move(value), writer});
  } else {
    account_locked(it->second.owner, key, it->second.value.size(), true, value.size(), true);
    it->second.value = std::move(value);
  }
  return Status::ok();
}

Status KvStore::set_by(int writer, const std::string& key, std::string value) {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    HVD_RETURN_IF_ERROR(put_locked(writer, key, std::move(value)));
    wake_locked(key, ready);
  }
  answer(ready);
  return Status::ok();
}

Result<std::vector<std::string>> KvStore::get(const std::vector<std::string>& keys,
                                              std::chrono::milliseconds timeout) {
  return get(keys, timeout, nullptr);
}

Result<std::vector<std::string>> KvStore::get(const std::vector<std::string>& keys,
                                              std::chrono::milliseconds timeout,
                                              const std::function<bool()>& cancelled) {
  using Clock = std::chrono::steady_clock;
  // Clamped so that the deadline cannot overflow (about 30 years).
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                           timeout, std::chrono::hours(24 * 365 * 30));
  return wait_for_answer<Answer>(
      [&](std::function<void(Answer)> done) { return get_async(keys, std::move(done)); },
      [&](uint64_t ticket, GiveUp why) { give_up(ticket, why, timeout); }, deadline, cancelled);
}

uint64_t KvStore::get_async(const std::vector<std::string>& keys, GetDone done) {
  std::optional<Answer> now;
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    ticket = next_ticket_++;
    Waiting get{keys, 0, nullptr};
    now = evaluate_locked(ticket, get);
    if (!now) {
      get.done = std::move(done);
      gets_.emplace(ticket, std::move(get));
    }
  }
  if (now) {
    done(std::move(*now));
    return 0;
  }
  return ticket;
}

std::vector<std::string> KvStore::missing_locked(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (values_.find(k) == values_.end()) missing.push_back(k);
  }
  return missing;
}

std::optional<KvStore::Answer> KvStore::evaluate_locked(uint64_t ticket, Waiting& get) {
  const auto& keys = get.keys;
  if (closed_) return Answer(Status{common::StatusCode::kCancelled, "key-value store is closed"});
  size_t& next = get.next;
  while (next < keys.size() && values_.find(keys[next]) != values_.end()) ++next;
  if (next == keys.size()) {
    // One found earlier may have been deleted since: look again at all.
    next = 0;
    while (next < keys.size() && values_.find(keys[next]) != values_.end()) ++next;
    if (next == keys.size()) {
      std::vector<std::string> out;
      out.reserve(keys.size());
      for (const auto& k : keys) out.push_back(values_.at(k).value);
      return Answer(std::move(out));
    }
  }
  if (!aborted_.empty()) {
    for (const auto& k : missing_locked(keys)) {
      if (const std::string* reason = abort_reason_locked(k)) {
        return Answer(common::aborted("key '" + k + "' will not come: " + *reason));
      }
    }
  }
  waiters_.emplace(keys[next], ticket);
  return std::nullopt;
}

void KvStore::give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited) {
  GetDone done;
  Answer answer = Status::ok();
  {
    std::lock_guard lock(mu_);
    auto it = gets_.find(ticket);
    if (it == gets_.end()) return;
    Waiting& get = it->second;
    auto [from, to] = waiters_.equal_range(get.keys[get.next]);
    for (auto w = from; w != to; ++w) {
      if (w->second == ticket) {
        waiters_.erase(w);
        break;
      }
    }
    const std::string missing = join_keys(missing_locked(get.keys));
    answer = why == GiveUp::kTimeout
                 ? Answer(common::timeout_error("timed out after " +
                                                std::to_string(waited.count()) +
                                                " ms waiting for keys: " + missing))
                 : Answer(Status{common::StatusCode::kCancelled,
                                 "gave up waiting for keys: " + missing});
    done = std::move(get.done);
    gets_.erase(it);
  }
  done(std::move(answer));
}

size_t KvStore::waiting_gets() const {
  std::lock_guard lock(mu_);
  return gets_.size();
}

void KvStore::answer(Ready& ready) {
  for (auto& [done, result] : ready) done(std::move(result));
  ready.clear();
}

Result<int64_t> KvStore::add(const std::string& key, int64_t delta) {
  return add_by(kJob, key, delta);
}

Result<int64_t> KvStore::add_by(int writer, const std::string& key, int64_t delta) {
  int64_t sum = 0;
  Ready ready;
  {
    std::lock_guard lock(mu_);
    if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
    auto it = values_.find(key);
    int64_t current = 0;
    if (it != values_.end()) {
      const std::string& text = it->second.value;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), current);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        return common::invalid_argument("key '" + key + "' does not hold an integer");
      }
    }
    sum = current + delta;
    HVD_RETURN_IF_ERROR(put_locked(writer, key, std::to_string(sum)));
    wake_locked(key, ready);
  }
  answer(ready);
  return sum;
}

Result<bool> KvStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
  for (const auto& k : keys) {
    if (values_.find(k) == values_.end()) return false;
  }
  return true;
}

Result<bool> KvStore::remove(const std::string& key) { return remove_by(kJob, key); }

Result<bool> KvStore::remove_by(int writer, const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = values_.find(key);
  if (it == values_.end()) {
    if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
    return false;
  }
  // Deleting shrinks the store: only the owner's check applies.
  HVD_RETURN_IF_ERROR(admit_locked(writer, key, &it->second, it->second.value.size()));
  account_locked(it->second.owner, key, it->second.value.size(), true, 0, false);
  values_.erase(it);
  return true;
}

const std::string* KvStore::abort_reason_locked(const std::string& key) const {
  for (const auto& [prefix, reason] : aborted_) {
    if (key.compare(0, prefix.size(), prefix) == 0) return &reason;
  }
  return nullptr;
}

void KvStore::abort_prefix(const std::string& prefix, const std::string& reason) {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    aborted_.emplace(prefix, reason);  // the first reason stays
    wake_all_locked(ready);
  }
  answer(ready);
}

size_t KvStore::remove_prefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  std::erase_if(aborted_, [&](const auto& a) { return a.first.compare(0, prefix.size(), prefix) == 0; });
  size_t removed = 0;
  for (auto it = values_.lower_bound(prefix);
       it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    account_locked(it->second.owner, it->first, it->second.value.size(), true, 0, false);
    it = values_.erase(it);
    ++removed;
  }
  return removed;
}

void KvStore::close() {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    wake_all_locked(ready);
  }
  answer(ready);
}

void KvStore::recheck_locked(uint64_t ticket, Ready& ready) {
  auto it = gets_.find(ticket);
  if (it == gets_.end()) return;
  if (auto done = evaluate_locked(ticket, it->second)) {
    ready.emplace_back(std::move(it->second.done), std::move(*done));
    gets_.erase(it);
  }
}

void KvStore::wake_locked(const std::string& key, Ready& ready) {
  auto [from, to] = waiters_.equal_range(key);
  if (from == to) return;
  std::vector<uint64_t> tickets;
  for (auto it = from; it != to; ++it) tickets.push_back(it->second);
  waiters_.erase(from, to);
  for (uint64_t ticket : tickets) recheck_locked(ticket, ready);
}

void KvStore::wake_all_locked(Ready& ready) {
  waiters_.clear();
  std::vector<uint64_t> tickets;
  tickets.reserve(gets_.size());
  for (const auto& [ticket, get] : gets_) tickets.push_back(ticket);
  for (uint64_t ticket : tickets) recheck_locked(ticket, ready);
}

}  // namespace hvd::daemon
