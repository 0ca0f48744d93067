#include "daemon/rendezvous/kv_store.h"

#include <algorithm>
#include <charconv>

namespace hvd::daemon {

namespace {

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

}  // namespace

Status KvStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return {common::StatusCode::kCancelled, "key-value store is closed"};
    values_[key] = value;
  }
  changed_.notify_all();
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
  constexpr auto kCancelPoll = std::chrono::milliseconds(100);
  // Clamped so that the deadline cannot overflow (about 30 years).
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                           timeout, std::chrono::hours(24 * 365 * 30));
  std::unique_lock lock(mu_);
  for (;;) {
    if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
    std::vector<std::string> missing;
    for (const auto& k : keys) {
      if (values_.find(k) == values_.end()) missing.push_back(k);
    }
    if (missing.empty()) break;
    for (const auto& k : missing) {
      if (const std::string* reason = abort_reason_locked(k)) {
        return common::aborted("key '" + k + "' will not come: " + *reason);
      }
    }
    // The keys are checked once more after the deadline: one may have
    // arrived with the timeout.
    const auto now = Clock::now();
    if (now >= deadline) {
      return common::timeout_error("timed out after " + std::to_string(timeout.count()) +
                                   " ms waiting for keys: " + join_keys(missing));
    }
    if (cancelled && cancelled()) {
      return Status{common::StatusCode::kCancelled,
                    "gave up waiting for keys: " + join_keys(missing)};
    }
    auto until = deadline;
    if (cancelled && until - now > kCancelPoll) until = now + kCancelPoll;
    changed_.wait_until(lock, until);
  }
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(values_.at(k));
  return out;
}

Result<int64_t> KvStore::add(const std::string& key, int64_t delta) {
  int64_t sum = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
    auto it = values_.find(key);
    int64_t current = 0;
    if (it != values_.end()) {
      const std::string& text = it->second;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), current);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        return common::invalid_argument("key '" + key + "' does not hold an integer");
      }
    }
    sum = current + delta;
    values_[key] = std::to_string(sum);
  }
  changed_.notify_all();
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

Result<bool> KvStore::remove(const std::string& key) {
  std::lock_guard lock(mu_);
  if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
  return values_.erase(key) != 0;
}

const std::string* KvStore::abort_reason_locked(const std::string& key) const {
  for (const auto& [prefix, reason] : aborted_) {
    if (key.compare(0, prefix.size(), prefix) == 0) return &reason;
  }
  return nullptr;
}

void KvStore::abort_prefix(const std::string& prefix, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    aborted_.emplace(prefix, reason);  // the first reason stays
  }
  changed_.notify_all();
}

size_t KvStore::remove_prefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  std::erase_if(aborted_, [&](const auto& a) { return a.first.compare(0, prefix.size(), prefix) == 0; });
  size_t removed = 0;
  for (auto it = values_.lower_bound(prefix);
       it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = values_.erase(it);
    ++removed;
  }
  return removed;
}

void KvStore::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::daemon
