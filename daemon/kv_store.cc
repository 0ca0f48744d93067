#include "daemon/kv_store.h"

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
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  for (;;) {
    if (closed_) return Status{common::StatusCode::kCancelled, "key-value store is closed"};
    std::vector<std::string> missing;
    for (const auto& k : keys) {
      if (values_.find(k) == values_.end()) missing.push_back(k);
    }
    if (missing.empty()) break;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline) {
      // One last look: the key may have arrived with the timeout.
      bool all = true;
      for (const auto& k : missing) all = all && values_.count(k) != 0;
      if (!all) {
        return common::timeout_error("timed out after " + std::to_string(timeout.count()) +
                                     " ms waiting for keys: " + join_keys(missing));
      }
    }
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

void KvStore::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::daemon
