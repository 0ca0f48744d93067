#include "runtime/fault_store.h"

namespace hvd::runtime {

common::Status FaultStore::set(const std::string& key, const std::string& value) {
  auto written = store_.set(key, value);
  if (written.is_ok()) faults_.reach("keys", round_, slot_, key);
  return written;
}

}  // namespace hvd::runtime
