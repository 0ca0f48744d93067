// The job's first rendezvous against the start timeout (--start-timeout):
// which ranks have joined it so far, the ranks that never joined once it is
// (nearly) due, and a progress line every kJoinProgressEvery while it
// waits. Only the first rendezvous is timed here; later rounds are the
// runtime's. Used by the job session (launcher/job_session.h) on its thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/slot_plan.h"

namespace hvd::daemon {
class RendezvousService;
}  // namespace hvd::daemon

namespace hvd::launcher {

// While the first rendezvous waits for ranks, a progress line this often.
inline constexpr std::chrono::seconds kJoinProgressEvery{10};

// What FirstRound reads of the rendezvous rounds, at one moment.
struct RoundView {
  int64_t round = 0;  // 0: the first
  // When the first rank joined the first round; empty until then.
  std::optional<std::chrono::steady_clock::time_point> first_join;
  bool complete = false;     // the round formed: every rank joined it
  std::vector<int> missing;  // ranks not joined in the first round (once one has)
};
// The view of a static job's rounds; an empty one (nobody joined) for an
// elastic job, whose rounds its policy times (--elastic-timeout,
// docs/elastic.md).
RoundView view_of(const daemon::RendezvousService& rendezvous);

class FirstRound {
 public:
  using Clock = std::chrono::steady_clock;

  // `plan`: the ranks launched at the start (outlives this). The wait is
  // `timeout` scaled with the most ranks on one host (common/scaled_timeout.h:
  // 30 s + 100 ms per rank), as the workers' own Join waits.
  FirstRound(std::chrono::seconds timeout, const std::vector<RankSlot>& plan);

  std::chrono::seconds timeout() const { return timeout_; }

  // Notes which ranks have joined the first rendezvous so far (`view`:
  // view_of(the rendezvous' membership), here and below).
  void track(const RoundView& view);
  // Ranks that never joined the first rendezvous, once it is within `slack`
  // of its timeout; empty when it is complete or not due. A rank whose own
  // Join timed out has been withdrawn from the membership: it did call
  // init, so it is not named.
  std::vector<int> overdue(const RoundView& view, Clock::time_point now,
                           std::chrono::milliseconds slack);
  // Every kJoinProgressEvery while the first rendezvous waits, who joined,
  // who is missing where and how much of the timeout has passed:
  // "rendezvous: 1 of 2 ranks joined, waiting for rank 1 on host h2 (10 of
  // 30 s)"; nothing when no line is due.
  std::optional<std::string> progress(const RoundView& view, Clock::time_point now);
  // "rendezvous timed out after 30 s: rank 1 never joined (a worker must
  // call hvd.init())".
  std::string timeout_error(const std::vector<int>& missing) const;

 private:
  const std::chrono::seconds timeout_;
  const std::vector<RankSlot>& plan_;
  std::vector<bool> joined_once_;  // ranks seen in the first rendezvous
  std::optional<Clock::time_point> next_progress_;
};

}  // namespace hvd::launcher
