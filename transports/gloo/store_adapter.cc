#include "transports/gloo/store_adapter.h"

#include <gloo/common/error.h>

#include <utility>

namespace hvd::transports::gloo {

StoreAdapter::StoreAdapter(common::Store& store, std::string prefix,
                           std::chrono::milliseconds timeout)
    : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

void StoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  common::Status status = store_.set(prefix_ + key, std::string(data.begin(), data.end()));
  if (!status.is_ok()) fail(status);
}

std::vector<char> StoreAdapter::get(const std::string& key) {
  auto values = store_.get({prefix_ + key}, timeout_);
  if (!values.is_ok()) fail(values.status());
  const std::string& value = values.value().front();
  return std::vector<char>(value.begin(), value.end());
}

void StoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void StoreAdapter::wait(const std::vector<std::string>& keys,
                        const std::chrono::milliseconds& timeout) {
  // gloo passes kNoTimeout (zero) to mean "no particular timeout".
  auto values = store_.get(prefixed(keys), timeout.count() > 0 ? timeout : timeout_);
  if (!values.is_ok()) fail(values.status());
}

std::vector<std::string> StoreAdapter::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(prefix_ + key);
  return out;
}

void StoreAdapter::fail(const common::Status& status) {
  if (first_error_.is_ok()) first_error_ = status;
  throw ::gloo::IoException("rendezvous store: " + status.to_string());
}

}  // namespace hvd::transports::gloo
