#include "daemon/rendezvous/liveness.h"

namespace hvd::daemon {

Liveness::Liveness(int size)
    : last_(size > 0 ? static_cast<size_t>(size) : 0),
      since_(last_.size()),
      arrived_(last_.size(), false) {}

void Liveness::grow(int rank) {
  // Elastic jobs have slots beyond the first world's size.
  if (rank >= 0 && rank < kMaxRanks && !valid(rank)) {
    last_.resize(static_cast<size_t>(rank) + 1);
    since_.resize(last_.size());
    arrived_.resize(last_.size(), false);
  }
}

void Liveness::joined(int rank, Clock::time_point now) {
  std::lock_guard lock(mu_);
  grow(rank);
  if (!valid(rank)) return;
  last_[static_cast<size_t>(rank)] = now;
  since_[static_cast<size_t>(rank)] = now;
}

void Liveness::arrived(int rank) {
  std::lock_guard lock(mu_);
  grow(rank);
  if (valid(rank)) arrived_[static_cast<size_t>(rank)] = true;
}

bool Liveness::has_arrived(int rank) const {
  std::lock_guard lock(mu_);
  return valid(rank) && arrived_[static_cast<size_t>(rank)];
}

void Liveness::beat(int rank, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!valid(rank)) return;
  auto& last = last_[static_cast<size_t>(rank)];
  if (last && now > *last) last = now;
}

void Liveness::left(int rank) {
  std::lock_guard lock(mu_);
  if (!valid(rank)) return;
  last_[static_cast<size_t>(rank)].reset();
  arrived_[static_cast<size_t>(rank)] = false;
}

std::vector<int> Liveness::silent(std::chrono::milliseconds timeout, Clock::time_point now) const {
  std::lock_guard lock(mu_);
  std::vector<int> out;
  for (size_t r = 0; r < last_.size(); ++r) {
    if (last_[r] && now - *last_[r] > timeout) out.push_back(static_cast<int>(r));
  }
  return out;
}

std::optional<Liveness::Clock::duration> Liveness::quiet_for(int rank,
                                                            Clock::time_point now) const {
  std::lock_guard lock(mu_);
  if (!valid(rank) || !last_[static_cast<size_t>(rank)]) return std::nullopt;
  return now - *last_[static_cast<size_t>(rank)];
}

std::optional<Liveness::Clock::time_point> Liveness::watched_since(int rank) const {
  std::lock_guard lock(mu_);
  if (!valid(rank) || !last_[static_cast<size_t>(rank)]) return std::nullopt;
  return since_[static_cast<size_t>(rank)];
}

}  // namespace hvd::daemon
