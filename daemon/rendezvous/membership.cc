#include "daemon/rendezvous/membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/rendezvous/round_layout.h"

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kCancelPoll = std::chrono::milliseconds(100);

// "rank 2 of 4 has not joined" / "ranks 1, 3 of 4 have not joined"
std::string describe_missing(const std::vector<int>& missing, int size) {
  std::string list;
  for (int r : missing) {
    if (!list.empty()) list += ", ";
    list += std::to_string(r);
  }
  if (missing.size() == 1) {
    return "rank " + list + " of " + std::to_string(size) + " has not joined";
  }
  return "ranks " + list + " of " + std::to_string(size) + " have not joined";
}

}  // namespace

Membership::Membership(int size)
    : size_(size),
      joined_(size > 0 ? size : 0, false),
      placed_(size > 0 ? size : 0),
      worlds_(size > 0 ? size : 0) {}

Result<JoinResult> Membership::join(const common::Placement& placement, int64_t pid,
                                    std::chrono::milliseconds timeout) {
  return join(placement, pid, timeout, nullptr);
}

void Membership::settle_locked() {
  for (int r = 0; r < size_; ++r) {
    JoinResult& world = worlds_[static_cast<size_t>(r)];
    world = JoinResult{placed_[static_cast<size_t>(r)], round_};
    world.rank = r;  // it may have asked for any rank (-1)
    world.size = size_;
  }
  set_cross_ranks(worlds_);
}

Result<JoinResult> Membership::join(const common::Placement& placement, int64_t pid,
                                    std::chrono::milliseconds timeout,
                                    const std::function<bool()>& cancelled) {
  const int requested_rank = placement.rank;
  const int size = placement.size;
  const std::string& host = placement.host;
  if (size_ <= 0) {
    return common::invalid_argument("the job has no ranks (size " + std::to_string(size_) + ")");
  }
  if (size != size_) {
    return common::invalid_argument("size " + std::to_string(size) +
                                    " differs from the job's size " + std::to_string(size_));
  }
  if (placement.local_size < 1 || placement.local_rank < 0 ||
      placement.local_rank >= placement.local_size) {
    return common::invalid_argument("local rank " + std::to_string(placement.local_rank) +
                                    " of local size " + std::to_string(placement.local_size) +
                                    " is not a placement");
  }
  if (requested_rank < -1 || requested_rank >= size_) {
    return common::invalid_argument("rank " + std::to_string(requested_rank) +
                                    " is out of range for size " + std::to_string(size_));
  }
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                           timeout, std::chrono::hours(24 * 365 * 30));

  std::unique_lock lock(mu_);
  if (closed_) return Status{common::StatusCode::kCancelled, "membership is closed"};

  if (joined_count_ == size_) {
    // Every rank joined the current round, so this rank rejoins: a new world.
    ++round_;
    std::fill(joined_.begin(), joined_.end(), false);
    joined_count_ = 0;
    spdlog::info("rendezvous: round {} opened", round_);
  }
  int rank = requested_rank;
  if (rank == -1) {
    rank = static_cast<int>(std::find(joined_.begin(), joined_.end(), false) - joined_.begin());
  } else if (joined_[rank]) {
    return Status{common::StatusCode::kAlreadyExists,
                  "rank " + std::to_string(rank) + " already joined round " +
                      std::to_string(round_) + " (from " + host + ", pid " +
                      std::to_string(pid) + ")"};
  }
  joined_[rank] = true;
  placed_[static_cast<size_t>(rank)] = placement;
  ++joined_count_;
  if (!first_join_) first_join_ = Clock::now();
  const int64_t my_round = round_;
  spdlog::debug("rendezvous: rank {} joined round {} from {} (pid {}), {}/{}", rank, my_round,
                host, pid, joined_count_, size_);
  if (joined_count_ == size_) {
    settle_locked();
    changed_.notify_all();
  }

  // The round is complete once every rank joined it; a later round can only
  // open after that.
  auto complete_for_me = [&] { return round_ != my_round || joined_count_ == size_; };
  auto withdraw = [&] {
    joined_[rank] = false;
    --joined_count_;
  };
  while (!complete_for_me()) {
    if (closed_) {
      withdraw();
      return Status{common::StatusCode::kCancelled, "membership is closed"};
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      const auto missing = missing_ranks_locked();
      withdraw();
      return common::timeout_error("timed out after " + std::to_string(timeout.count()) +
                                   " ms: " + describe_missing(missing, size_));
    }
    if (cancelled && cancelled()) {
      withdraw();
      return Status{common::StatusCode::kCancelled,
                    "rank " + std::to_string(rank) + " gave up waiting for the other ranks"};
    }
    auto until = deadline;
    if (cancelled && until - now > kCancelPoll) until = now + kCancelPoll;
    changed_.wait_until(lock, until);
  }
  // worlds_ holds my round: the next one cannot complete before I rejoin.
  return worlds_[static_cast<size_t>(rank)];
}

std::vector<int> Membership::missing_ranks_locked() const {
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    if (!joined_[r]) missing.push_back(r);
  }
  return missing;
}

std::vector<int> Membership::missing_ranks() const {
  std::lock_guard lock(mu_);
  return missing_ranks_locked();
}

std::optional<std::chrono::steady_clock::time_point> Membership::first_join_time() const {
  std::lock_guard lock(mu_);
  return first_join_;
}

bool Membership::complete() const {
  std::lock_guard lock(mu_);
  return joined_count_ == size_;
}

int64_t Membership::round() const {
  std::lock_guard lock(mu_);
  return round_;
}

void Membership::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

}  // namespace hvd::daemon
