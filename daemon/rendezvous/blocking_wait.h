// The blocking form of a wait the Rendezvous service answers through a callback
// (Rounds::join_async, KvStore::get_async, HotSpares::await_async: what the
// callback handlers use, holding no thread). In-process callers (tests, the
// foreign job's server) block on it: start(done) starts the wait and returns
// its ticket; this returns the answer done() was given. At the deadline, or
// when cancelled() says the caller went away (looked at every 100 ms),
// give_up(ticket, why) ends the wait (it answers, unless the wait just ended:
// the answer is on its way). each_look, when set, runs at every look (without
// the lock).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

namespace hvd::daemon {

enum class GiveUp { kTimeout, kCancelled };

template <typename Answer>
Answer wait_for_answer(const std::function<uint64_t(std::function<void(Answer)>)>& start,
                       const std::function<void(uint64_t ticket, GiveUp why)>& give_up,
                       std::chrono::steady_clock::time_point deadline,
                       const std::function<bool()>& cancelled,
                       const std::function<void()>& each_look = nullptr) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kLookEvery = std::chrono::milliseconds(100);
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Answer> answer;
  };
  auto outcome = std::make_shared<Outcome>();
  const uint64_t ticket = start([outcome](Answer a) {
    std::lock_guard lock(outcome->mu);
    outcome->answer = std::move(a);
    outcome->cv.notify_all();
  });
  std::unique_lock lock(outcome->mu);
  while (!outcome->answer) {
    const auto now = Clock::now();
    std::optional<GiveUp> why;
    if (now >= deadline) {
      why = GiveUp::kTimeout;
    } else if (cancelled && cancelled()) {
      why = GiveUp::kCancelled;
    }
    if (why || each_look) {
      lock.unlock();
      if (why) {
        give_up(ticket, *why);
      } else {
        each_look();
      }
      lock.lock();
      if (why || outcome->answer) continue;
    }
    auto until = deadline;
    if ((cancelled || each_look) && until - now > kLookEvery) until = now + kLookEvery;
    outcome->cv.wait_until(lock, until);
  }
  return std::move(*outcome->answer);
}

}  // namespace hvd::daemon
