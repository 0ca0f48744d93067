#include "launcher/elastic/background_calls.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using hvd::launcher::elastic::BackgroundCalls;

TEST_CASE("BackgroundCalls: run() returns while its call is still blocked", "[background]") {
  BackgroundCalls calls;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> done{0};
  // Both calls block until released: run() must not wait for either (the
  // driver thread goes on while a Signal waits for an unreachable agent).
  calls.run([gate, &done] { gate.wait(); ++done; });
  calls.run([gate, &done] { gate.wait(); ++done; });
  CHECK(calls.pending() == 2);
  CHECK(done == 0);
  release.set_value();
  calls.wait_all();
  CHECK(done == 2);
  CHECK(calls.pending() == 0);
}

TEST_CASE("BackgroundCalls: finished calls are forgotten, wait_all can be called again",
          "[background]") {
  BackgroundCalls calls;
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) calls.run([&done] { ++done; });
  calls.wait_all();
  CHECK(done == 20);
  CHECK(calls.pending() == 0);
  calls.run([&done] { ++done; });
  calls.wait_all();
  CHECK(done == 21);
}

TEST_CASE("BackgroundCalls: destruction waits for the calls", "[background]") {
  std::atomic<bool> finished{false};
  {
    BackgroundCalls calls;
    calls.run([&finished] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
  }
  CHECK(finished);
}
