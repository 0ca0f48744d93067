#include "daemon/rendezvous/membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <memory>

#include "daemon/rendezvous/round_layout.h"

namespace hvd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

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
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                           timeout, std::chrono::hours(24 * 365 * 30));
  return wait_for_answer<Result<JoinResult>>(
      [&](std::function<void(Result<JoinResult>)> done) {
        return join_async(placement, pid, std::move(done));
      },
      [&](uint64_t ticket, GiveUp why) { give_up(ticket, why, timeout); }, deadline, cancelled);
}

uint64_t Membership::join_async(const common::Placement& placement, int64_t pid, JoinDone done) {
  const int requested_rank = placement.rank;
  const int size = placement.size;
  const std::string& host = placement.host;
  auto fail = [&](Status status) {
    done(std::move(status));
    return uint64_t{0};
  };
  if (size_ <= 0) {
    return fail(common::invalid_argument("the job has no ranks (size " + std::to_string(size_) +
                                         ")"));
  }
  if (size != size_) {
    return fail(common::invalid_argument("size " + std::to_string(size) +
                                         " differs from the job's size " + std::to_string(size_)));
  }
  if (placement.local_size < 1 || placement.local_rank < 0 ||
      placement.local_rank >= placement.local_size) {
    return fail(common::invalid_argument("local rank " + std::to_string(placement.local_rank) +
                                         " of local size " + std::to_string(placement.local_size) +
                                         " is not a placement"));
  }
  if (requested_rank < -1 || requested_rank >= size_) {
    return fail(common::invalid_argument("rank " + std::to_string(requested_rank) +
                                         " is out of range for size " + std::to_string(size_)));
  }

  std::vector<std::pair<JoinDone, JoinResult>> ready;  // answered once the lock is let go
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) return fail(Status{common::StatusCode::kCancelled, "membership is closed"});
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
      return fail(Status{common::StatusCode::kAlreadyExists,
                         "rank " + std::to_string(rank) + " already joined round " +
                             std::to_string(round_) + " (from " + host + ", pid " +
                             std::to_string(pid) + ")"});
    }
    joined_[rank] = true;
    placed_[static_cast<size_t>(rank)] = placement;
    ++joined_count_;
    if (!first_join_) first_join_ = Clock::now();
    spdlog::debug("rendezvous: rank {} joined round {} from {} (pid {}), {}/{}", rank, round_,
                  host, pid, joined_count_, size_);
    if (joined_count_ == size_) {
      // The round is complete: every join waiting for it is answered
      // (worlds_ holds it: the next one cannot complete before they rejoin).
      settle_locked();
      ready.reserve(waiting_.size() + 1);
      for (auto& [t, w] : waiting_) {
        ready.emplace_back(std::move(w.done), worlds_[static_cast<size_t>(w.rank)]);
      }
      waiting_.clear();
      ready.emplace_back(std::move(done), worlds_[static_cast<size_t>(rank)]);
    } else {
      ticket = next_ticket_++;
      waiting_.emplace(ticket, Waiting{rank, std::move(done)});
    }
  }
  for (auto& [answer, world] : ready) answer(std::move(world));
  return ticket;
}

void Membership::give_up(uint64_t ticket, GiveUp why, std::chrono::milliseconds waited) {
  JoinDone done;
  Status status;
  {
    std::lock_guard lock(mu_);
    auto it = waiting_.find(ticket);
    if (it == waiting_.end()) return;
    const int rank = it->second.rank;
    if (why == GiveUp::kTimeout) {
      status = common::timeout_error("timed out after " + std::to_string(waited.count()) +
                                     " ms: " + describe_missing(missing_ranks_locked(), size_));
    } else {
      status = Status{common::StatusCode::kCancelled,
                      "rank " + std::to_string(rank) + " gave up waiting for the other ranks"};
    }
    // Withdrawn: the rank can join again.
    joined_[rank] = false;
    --joined_count_;
    done = std::move(it->second.done);
    waiting_.erase(it);
  }
  done(std::move(status));
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
  std::map<uint64_t, Waiting> waiting;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (const auto& [ticket, w] : waiting_) {
      joined_[w.rank] = false;
      --joined_count_;
    }
    waiting.swap(waiting_);
  }
  for (auto& [ticket, w] : waiting) {
    w.done(Status{common::StatusCode::kCancelled, "membership is closed"});
  }
}

}  // namespace hvd::daemon
