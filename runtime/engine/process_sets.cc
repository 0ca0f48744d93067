#include "runtime/engine/process_sets.h"

#include <utility>

namespace hvd::runtime::engine {

bool ProcessSetTable::add(std::shared_ptr<const ProcessSet> set) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  int32_t id = set->id;
  sets_[id] = std::move(set);
  return true;
}

std::shared_ptr<const ProcessSet> ProcessSetTable::find(int32_t id) const {
  std::lock_guard lock(mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::shared_ptr<const ProcessSet> ProcessSetTable::remove(int32_t id) {
  std::lock_guard lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  auto set = std::move(it->second);
  sets_.erase(it);
  return set;
}

std::vector<std::shared_ptr<const ProcessSet>> ProcessSetTable::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const ProcessSet>> out;
  for (const auto& [id, set] : sets_) out.push_back(set);
  return out;
}

std::vector<std::shared_ptr<const ProcessSet>> ProcessSetTable::take_all() {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const ProcessSet>> out;
  for (auto& [id, set] : sets_) out.push_back(std::move(set));
  sets_.clear();
  closed_ = true;
  return out;
}

}  // namespace hvd::runtime::engine
