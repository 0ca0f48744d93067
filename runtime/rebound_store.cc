#include "runtime/rebound_store.h"

#include <mutex>
#include <utility>

namespace hvd::runtime {

void ReboundStore::bind(common::Store* store, std::string prefix) {
  std::unique_lock lock(mu_);
  store_ = store;
  prefix_ = std::move(prefix);
}

void ReboundStore::unbind() {
  std::unique_lock lock(mu_);
  store_ = nullptr;
  prefix_.clear();
}

common::Status ReboundStore::unbound() const {
  return common::unavailable(
      "the store of a shrunk GPU transport is used between rounds (no hvd.init() since the "
      "last hvd.shutdown())");
}

std::vector<std::string> ReboundStore::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(prefix_ + key);
  return out;
}

common::Status ReboundStore::set(const std::string& key, const std::string& value) {
  std::shared_lock lock(mu_);
  if (store_ == nullptr) return unbound();
  return store_->set(prefix_ + key, value);
}

common::Result<std::vector<std::string>> ReboundStore::get(const std::vector<std::string>& keys,
                                                           std::chrono::milliseconds timeout) {
  std::shared_lock lock(mu_);
  if (store_ == nullptr) return unbound();
  return store_->get(prefixed(keys), timeout);
}

common::Result<int64_t> ReboundStore::add(const std::string& key, int64_t delta) {
  std::shared_lock lock(mu_);
  if (store_ == nullptr) return unbound();
  return store_->add(prefix_ + key, delta);
}

common::Result<bool> ReboundStore::check(const std::vector<std::string>& keys) {
  std::shared_lock lock(mu_);
  if (store_ == nullptr) return unbound();
  return store_->check(prefixed(keys));
}

common::Result<bool> ReboundStore::remove(const std::string& key) {
  std::shared_lock lock(mu_);
  if (store_ == nullptr) return unbound();
  return store_->remove(prefix_ + key);
}

}  // namespace hvd::runtime
