#include "launcher/first_round.h"

#include <algorithm>
#include <map>

#include "common/scaled_timeout.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "launcher/agent_targets.h"

namespace hvd::launcher {

RoundView view_of(const daemon::RendezvousService& rendezvous) {
  if (rendezvous.elastic()) return {};
  const daemon::Rounds& rounds = rendezvous.rounds();
  const int64_t formed = rounds.round();  // -1 before the first
  RoundView view{std::max<int64_t>(formed, 0), rounds.first_join_time(), formed >= 0, {}};
  if (formed < 0 && view.first_join) view.missing = rounds.missing();
  return view;
}

namespace {

// The most ranks the plan starts on one host.
int most_on_one_host(const std::vector<RankSlot>& plan) {
  std::map<std::string, int> per_host;
  int most = 0;
  for (const RankSlot& slot : plan) most = std::max(most, ++per_host[slot.host]);
  return most;
}

}  // namespace

FirstRound::FirstRound(std::chrono::seconds timeout, const std::vector<RankSlot>& plan)
    : timeout_(std::chrono::floor<std::chrono::seconds>(
          common::scaled_timeout(timeout, most_on_one_host(plan)))),
      plan_(plan),
      joined_once_(plan.size(), false) {}

void FirstRound::track(const RoundView& view) {
  if (view.round != 0 || !view.first_join) return;
  std::vector<bool> joined(joined_once_.size(), true);
  for (int rank : view.missing) joined[static_cast<size_t>(rank)] = false;
  for (size_t r = 0; r < joined.size(); ++r) joined_once_[r] = joined_once_[r] || joined[r];
}

std::vector<int> FirstRound::overdue(const RoundView& view, Clock::time_point now,
                                     std::chrono::milliseconds slack) {
  if (view.round != 0 || view.complete) return {};
  auto first = view.first_join;
  if (!first || now - *first < timeout_ - slack) return {};
  track(view);
  std::vector<int> missing;
  for (int rank : view.missing) {
    if (!joined_once_[static_cast<size_t>(rank)]) missing.push_back(rank);
  }
  return missing;
}

std::optional<std::string> FirstRound::progress(const RoundView& view, Clock::time_point now) {
  auto first = view.first_join;
  if (view.round != 0 || view.complete || !first) return std::nullopt;
  if (!next_progress_) next_progress_ = *first + kJoinProgressEvery;
  if (now < *next_progress_) return std::nullopt;
  next_progress_ = now + kJoinProgressEvery;
  const std::vector<int> missing = view.missing;
  std::vector<std::string> hosts;
  for (int rank : missing) {
    const std::string& host = plan_[static_cast<size_t>(rank)].host;
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  std::string on;
  for (const std::string& host : hosts) on += (on.empty() ? "" : ", ") + host;
  const int np = static_cast<int>(plan_.size());
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - *first).count();
  return "rendezvous: " + std::to_string(np - static_cast<int>(missing.size())) + " of " +
         std::to_string(np) + " ranks joined, waiting for " + describe_ranks(missing) +
         " on host" + (hosts.size() == 1 ? "" : "s") + " " + on + " (" +
         std::to_string(static_cast<long long>(waited)) + " of " +
         std::to_string(static_cast<long long>(timeout_.count())) + " s)";
}

std::string FirstRound::timeout_error(const std::vector<int>& missing) const {
  return "rendezvous timed out after " + std::to_string(timeout_.count()) +
         " s: " + describe_ranks(missing) + " never joined (a worker must call hvd.init())";
}

}  // namespace hvd::launcher
