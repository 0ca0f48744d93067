// How the ranks of a crowded shm segment wait for a whole round
// (transports/shm/waiter.h): publications are counted at the counter's
// tally, await_all() returns only once every rank's own counter has reached
// the round, whatever order the ranks come in, also when a round that only
// one rank posts (a broadcast's) took the tally over; and a wait still ends
// on interrupt() and at its timeout, naming the late rank. Ranks are threads
// over one anonymous segment.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/shm/segment.h"
#include "transports/shm/waiter.h"

namespace hvd::transports::shm {
namespace {

using namespace std::chrono_literals;

Segment crowded_segment(int size) {
  auto segment = Segment::create_anonymous(size, 64 << 10);
  REQUIRE(segment.is_ok());
  Segment s = std::move(segment).value();
  // What the creator writes when ranks outnumber its cores.
  std::atomic_ref<uint32_t>(s.header().crowded).store(1);
  return s;
}

uint64_t counter_of(const Segment& s, int rank) {
  return std::atomic_ref<uint64_t>(s.slot(rank).posted).load();
}

}  // namespace

TEST_CASE("shm waiter: a crowded segment's ranks meet at the tally, round after round") {
  constexpr int kSize = 6;
  constexpr uint64_t kRounds = 300;
  Segment segment = crowded_segment(kSize);
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (int r = 0; r < kSize; ++r) waiters.push_back(std::make_unique<Waiter>(segment, r, 10s));
  REQUIRE(waiters[0]->crowded());
  std::atomic<int> early{0};  // await_all returned before every rank reached the round
  std::atomic<int> failed{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kSize; ++r) {
    ranks.emplace_back([&, r] {
      Waiter& w = *waiters[static_cast<size_t>(r)];
      for (uint64_t round = 1; round <= kRounds; ++round) {
        // Every third round is a broadcast's: only rank 0 posts, the others
        // wait for it alone; the next full round's tally replaces its count.
        if (round % 3 == 0) {
          if (r == 0) {
            w.publish(Counter::kPosted, round);
          } else if (!w.await(Counter::kPosted, 0, round).is_ok()) {
            ++failed;
          }
          continue;
        }
        if ((round + static_cast<uint64_t>(r)) % 4 == 0) std::this_thread::sleep_for(200us);
        w.publish(Counter::kPosted, round);
        if (!w.await_all(Counter::kPosted, round).is_ok()) {
          ++failed;
          continue;
        }
        for (int peer = 0; peer < kSize; ++peer) {
          if (round % 3 != 0 && counter_of(segment, peer) < round) ++early;
        }
      }
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(failed == 0);
  CHECK(early == 0);
}

TEST_CASE("shm waiter: a crowded wait ends at its timeout naming the late rank, and on interrupt") {
  Segment segment = crowded_segment(3);
  Waiter first(segment, 0, 300ms);
  Waiter second(segment, 1, 300ms);
  second.publish(Counter::kPosted, 1);
  first.publish(Counter::kPosted, 1);
  const auto start = std::chrono::steady_clock::now();
  common::Status late = first.await_all(Counter::kPosted, 1);  // rank 2 never posts
  CHECK(late.code() == common::StatusCode::kTimeout);
  CHECK(late.message().find("rank 2") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 5s);

  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    second.interrupt();
  });
  common::Status stopped = second.await_all(Counter::kPosted, 1);
  stopper.join();
  CHECK(stopped.code() == common::StatusCode::kAborted);
}

}  // namespace hvd::transports::shm
