#include "launcher/elastic/spare_pool.h"

#include <algorithm>

namespace hvd::launcher::elastic {

int SparePool::live() const {
  return static_cast<int>(std::count_if(spares_.begin(), spares_.end(),
                                        [](const auto& e) { return alive(e.second); }));
}

int SparePool::live_on(const std::string& host) const {
  return static_cast<int>(live_ids(host).size());
}

std::vector<int> SparePool::live_ids(const std::string& host) const {
  std::vector<int> out;
  for (const auto& [id, s] : spares_) {
    if (alive(s) && (host.empty() || s.host == host)) out.push_back(id);
  }
  return out;
}

int SparePool::add(const std::string& host) {
  const int id = next_id_++;
  spares_[id] = {host, Phase::kStarting, -1};
  return id;
}

void SparePool::ready(int id) {
  auto it = spares_.find(id);
  if (it != spares_.end() && it->second.phase == Phase::kStarting) {
    it->second.phase = Phase::kWaiting;
  }
}

std::optional<int> SparePool::pick(
    const std::string& preferred, const std::function<bool(const std::string&)>& eligible) const {
  std::optional<int> best;
  int best_score = -1;
  for (const auto& [id, s] : spares_) {
    if (!alive(s) || !eligible(s.host)) continue;
    const int score = (s.phase == Phase::kWaiting ? 2 : 0) + (s.host == preferred ? 1 : 0);
    if (score > best_score) {
      best = id;
      best_score = score;
    }
  }
  return best;
}

void SparePool::promote(int id, int slot) {
  auto it = spares_.find(id);
  if (it == spares_.end()) return;
  it->second.phase = Phase::kPromoted;
  it->second.slot = slot;
}

bool SparePool::gone(int id) {
  auto it = spares_.find(id);
  if (it == spares_.end() || !alive(it->second)) return false;
  it->second.phase = Phase::kGone;
  return true;
}

std::optional<int> SparePool::slot_of(int id) const {
  auto it = spares_.find(id);
  if (it == spares_.end() || it->second.phase != Phase::kPromoted) return std::nullopt;
  return it->second.slot;
}

bool SparePool::waiting(int id) const {
  auto it = spares_.find(id);
  return it != spares_.end() && it->second.phase == Phase::kWaiting;
}

std::string SparePool::host_of(int id) const {
  auto it = spares_.find(id);
  return it == spares_.end() ? "" : it->second.host;
}

}  // namespace hvd::launcher::elastic
